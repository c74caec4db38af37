package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSpreadOf(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want spread
	}{
		{"empty", nil, spread{}},
		{"one", []float64{3}, spread{3, 3, 3, 1}},
		{"odd", []float64{5, 1, 3}, spread{3, 1, 5, 3}},
		{"even takes the middle two", []float64{4, 1, 2, 10}, spread{3, 1, 10, 4}},
		{"unsorted five", []float64{9, 7, 8, 100, 1}, spread{8, 1, 100, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]float64(nil), tt.in...)
			if diff := cmp.Diff(tt.want, spreadOf(tt.in), cmp.AllowUnexported(spread{})); diff != "" {
				t.Errorf("spreadOf (-want +got):\n%s", diff)
			}
			if !cmp.Equal(in, tt.in) {
				t.Error("spreadOf reordered its input")
			}
		})
	}
}

func TestFormat(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0.00"}, {1.234, "1.23"}, {12.34, "12.3"}, {123.4, "123"}, {1234.5, "1,234"},
		{1234567, "1,234,567"}, {-4321, "-4,321"},
	}
	for _, tt := range tests {
		if got := format(tt.in); got != tt.want {
			t.Errorf("format(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestRatioAndSpreadString(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"ratio", ratio(spread{med: 30, n: 1}, spread{med: 20, n: 1}), "1.50×"},
		{"ratio without baseline", ratio(spread{med: 30, n: 1}, spread{}), "–"},
		{"ratio to zero", ratio(spread{med: 30, n: 1}, spread{med: 0, n: 2}), "–"},
		{"spread", spread{med: 2000, lo: 1500, hi: 2500, n: 3}.String(), "2,000 (1,500–2,500)"},
		{"spread of one", spread{med: 2, lo: 2, hi: 2, n: 1}.String(), "2.00"},
		{"no spread", spread{}.String(), "–"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

func TestReplaceSection(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want string
	}{
		{"empty file", "", beginMarker + "\nNEW\n" + endMarker + "\n"},
		{"no markers: appended", "# Perf\n\nprose", "# Perf\n\nprose\n\n" + beginMarker + "\nNEW\n" + endMarker + "\n"},
		{"markers: replaced, prose kept", "# Perf\n\n" + beginMarker + "\nOLD\nOLD\n" + endMarker + "\n\nmore prose\n",
			"# Perf\n\n" + beginMarker + "\nNEW\n" + endMarker + "\n\nmore prose\n"},
		{"old marker text still found", "a\n<!-- mcpbench:begin -->\nOLD\n" + endMarker + "\nb\n", "a\n" + beginMarker + "\nNEW\n" + endMarker + "\nb\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, replaceSection(tt.doc, "NEW\n")); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestLibraryVersions(t *testing.T) {
	gomod := []byte("module x\n\ngo 1.26.0\n\nrequire (\n\tgithub.com/mark3labs/mcp-go v1.2.1\n\tgithub.com/modelcontextprotocol/go-sdk v1.8.0\n)\n")
	want := map[string]string{"github.com/mark3labs/mcp-go": "v1.2.1", "github.com/modelcontextprotocol/go-sdk": "v1.8.0"}
	if diff := cmp.Diff(want, libraryVersions(gomod)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	one := []byte("module x\nrequire github.com/mark3labs/mcp-go v1.3.0\n")
	if got := libraryVersions(one)["github.com/mark3labs/mcp-go"]; got != "v1.3.0" {
		t.Errorf("single-line require: %q", got)
	}
}

func TestRotate(t *testing.T) {
	s := []string{"a", "b", "c"}
	for i, want := range [][]string{{"a", "b", "c"}, {"b", "c", "a"}, {"c", "a", "b"}, {"a", "b", "c"}} {
		if diff := cmp.Diff(want, rotate(s, i)); diff != "" {
			t.Errorf("rotate(%d) (-want +got):\n%s", i, diff)
		}
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, s); diff != "" {
		t.Error("rotate changed its input")
	}
}

// sampleReport is a made-up run: four servers and three repetitions,
// one server without the SSE transport, one failed run, a scenario whose
// target is set against the better peer (go-sdk, there), and goals met by
// one flowyprompt build and missed by the other.
func sampleReport() *report {
	var scs []scenario
	for _, sc := range scenarios(1) {
		if slices.Contains([]string{"stdio-get-1", "stdio-get-32", "stdio-tool-32", "sse-get-50", "http-get-50", "http-stateless-get-50", "sse-idle-1000"}, sc.id) {
			scs = append(scs, sc)
		}
	}
	r := &report{scenarios: scs, servers: []string{flowyprompt, flowypromptQuiet, mcpGo, goSDK, mcpGoValidate, httpFloor}}
	rpc := map[string][]float64{flowyprompt: {40000, 42000, 41000}, flowypromptQuiet: {66000, 70000, 68000}, mcpGo: {20000, 24000, 22000},
		goSDK: {10000, 11000, 9000}, mcpGoValidate: {15000, 16000, 17000}, httpFloor: {50000, 52000, 51000}}
	for rep := 1; rep <= 3; rep++ {
		for _, sc := range scs {
			for _, srv := range r.servers {
				if srv == mcpGoValidate && !sc.tools || srv == httpFloor && sc.kind != kindStreamable {
					continue
				}
				res := result{Rep: rep, Scenario: sc.id, Server: srv}
				v := rpc[srv][rep-1]
				if sc.kind == kindStateless && srv == goSDK {
					v *= 3 // the better peer here
				}
				switch {
				case sc.kind == kindSSE && srv == flowyprompt:
					res.Skipped = "the server exited before listening (exit status 2): flowyprompt: the HTTP transport is not built | yet"
				case sc.idle():
					res.Metrics = map[string]float64{mPerSession: v / 1000, mOpenRate: v / 10, mRSSBefore: 10240, mRSSAfter: 10240 + v, mPeakRSS: 10240 + v}
				case sc.id == "stdio-tool-32" && srv == goSDK && rep == 2:
					res.Error = "session 3: the server closed the event stream"
				default:
					res.Metrics = map[string]float64{mRPS: v, mP50: 1e6 / v, mP99: 3e6 / v, mCPUPerReq: 1e6 / v / 2, mCliCPUPerReq: 10, mPeakRSS: 16384}
				}
				r.results = append(r.results, res)
			}
		}
	}
	return r
}

func TestReportGolden(t *testing.T) {
	got := sampleReport().section(runInfo{
		date:     time.Date(2026, 11, 21, 20, 0, 0, 0, time.UTC),
		machine:  "Test CPU, 2 logical CPUs",
		command:  "go run ./cmd/mcpbench -reps 3",
		versions: map[string]string{"github.com/mark3labs/mcp-go": "v1.2.1", "github.com/modelcontextprotocol/go-sdk": "v1.8.0"},
		reps:     3,
		elapsed:  95 * time.Second,
		settings: "made up",
		caveat:   "a shared machine",
	})
	goldenText(t, filepath.Join("testdata", "report.golden.md"), got)
}

// update is the same flag the product's golden-file tests take, so one
// habit (go test -update, then review the diff) serves both modules.
var update = flag.Bool("update", false, "rewrite golden files instead of comparing with them")

// goldenText compares got with the file at path byte for byte; with
// -update it writes got to path instead.
func goldenText(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

func TestReportFacts(t *testing.T) {
	md := sampleReport().markdown()
	for _, want := range []string{
		// Medians with ranges, and the ratio to mcp-go.
		"| stdio prompts/get, 1 in flight | flowyprompt | 41,000 (40,000–42,000) | 1.86× |",
		"| stdio prompts/get, 1 in flight | mcp-go | 22,000 (20,000–24,000) | 1.00× |",
		// The failed run is left out of the median and reported.
		"| stdio tools/call render, 32 in flight | go-sdk | 9,500 (9,000–10,000) |",
		"go-sdk: failed rep 2: session 3: the server closed the event stream",
		// A missing transport is a note, not a failure; '|' is escaped.
		"| SSE prompts/get, 50 sessions | flowyprompt | not available |",
		`not built \| yet`,
		// mcp-go+validate only joins the tool scenario.
		"| stdio tools/call render, 32 in flight | mcp-go+validate | 16,000 (15,000–17,000) | 0.73× |",
		// The stateless scenario says how it drives the servers, and
		// compares flowyprompt with the better peer.
		"- Streamable HTTP prompts/get, 50 stateless clients (2026-07-28): every request at protocol 2026-07-28, with no initialize and no session",
		"- Streamable HTTP prompts/get, 50 stateless clients (2026-07-28): flowyprompt against the better peer, go-sdk: 1.37× its req/s, p99 0.73× its p99",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	// The goals: flowyprompt's ratio of medians to mcp-go's, met or missed
	// by each build; a build without numbers has none.
	for _, want := range []string{
		"| goal | flowyprompt | flowyprompt-quiet |",
		"| stdio prompts/get, 32 in flight: req/s at least 3× mcp-go's | 1.86×, missed | 3.09×, met |",
		"| SSE prompts/get, 50 sessions: req/s at least 1.3× mcp-go's | – | 3.09×, met |",
		"| Streamable HTTP prompts/get, 50 clients: server CPU per request at most 0.6× mcp-go's | 0.54×, met | 0.32×, met |",
		// Against the floor, which serves Streamable HTTP alone.
		"| Streamable HTTP prompts/get, 50 clients | httpfloor | 51,000 (50,000–52,000) |",
		"| Streamable HTTP prompts/get, 50 clients: server CPU per request at most 1.2× httpfloor's | 1.24×, missed | 0.75×, met |",
		"| SSE prompts/get, 50 sessions: server CPU per request at most 1.2× httpfloor's over Streamable HTTP | – | 0.75×, met |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "| stdio prompts/get, 1 in flight | mcp-go+validate") || strings.Contains(md, "| SSE prompts/get, 50 sessions | httpfloor") {
		t.Error("mcp-go+validate appears in a prompts scenario, or httpfloor beyond Streamable HTTP")
	}
	// Only the stateless scenario has a note.
	if n := strings.Count(md, "\n- "); n != 4 {
		t.Errorf("%d notes, want 4 (the stateless scenario's two, the skipped run, the failed one):\n%s", n, md)
	}
}

func TestAgainstBest(t *testing.T) {
	sc := scenario{id: "s", title: "T", latency: "p99", againstBest: true}
	run := func(srv string, rps, p99 float64) result {
		return result{Scenario: "s", Server: srv, Metrics: map[string]float64{mRPS: rps, mP99: p99}}
	}
	tests := []struct {
		name    string
		results []result
		want    string
	}{
		{"mcp-go better", []result{run(flowyprompt, 300, 10), run(mcpGo, 200, 20), run(goSDK, 100, 40)}, "T: flowyprompt against the better peer, mcp-go: 1.50× its req/s, p99 0.50× its p99"},
		{"go-sdk better", []result{run(flowyprompt, 300, 10), run(mcpGo, 100, 20), run(goSDK, 250, 5)}, "T: flowyprompt against the better peer, go-sdk: 1.20× its req/s, p99 2.00× its p99"},
		{"one peer", []result{run(flowyprompt, 300, 10), run(goSDK, 100, 20)}, "T: flowyprompt against the better peer, go-sdk: 3.00× its req/s, p99 0.50× its p99"},
		{"flowyprompt failed", []result{{Scenario: "s", Server: flowyprompt, Error: "400"}, run(mcpGo, 100, 20)}, ""},
		{"no peer", []result{run(flowyprompt, 300, 10)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &report{scenarios: []scenario{sc}, servers: []string{flowyprompt, mcpGo, goSDK}, results: tt.results}
			if got := r.againstBest(sc, mP99); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr bool
		check   func(options) bool
	}{
		{"defaults", nil, false, func(o options) bool {
			return o.reps == 5 && o.scale == 1 && len(o.only) == 0 && cmp.Equal(o.servers, []string{flowyprompt, flowypromptQuiet, mcpGo, goSDK, mcpGoValidate, httpFloor})
		}},
		{"a few scenarios", []string{"-scenarios", "stdio-get-1,http-idle-1000", "-reps", "2"}, false, func(o options) bool {
			return o.reps == 2 && cmp.Equal(o.only, []string{"stdio-get-1", "http-idle-1000"})
		}},
		{"the stateless scenario", []string{"-scenarios", "http-stateless-get-50", "-scale", "0.1"}, false, func(o options) bool {
			return o.scale == 0.1 && cmp.Equal(o.only, []string{"http-stateless-get-50"})
		}},
		{"servers", []string{"-servers", "mcp-go,go-sdk"}, false, func(o options) bool { return cmp.Equal(o.servers, []string{mcpGo, goSDK}) }},
		{"extra flowyprompt arguments", []string{"-flowyprompt-args", " --cpuprofile  /tmp/p.pprof "}, false, func(o options) bool {
			fp := servers("bin", "tpl", o.fpArgs, "")[0]
			return fp.name == flowyprompt && cmp.Equal(fp.stdio()[len(fp.stdio())-2:], []string{"--cpuprofile", "/tmp/p.pprof"}) &&
				cmp.Equal(fp.listen("", "127.0.0.1:1")[len(fp.listen("", "127.0.0.1:1"))-2:], []string{"--cpuprofile", "/tmp/p.pprof"})
		}},
		{"unknown scenario", []string{"-scenarios", "nope"}, true, nil},
		{"unknown server", []string{"-servers", "other"}, true, nil},
		{"zero reps", []string{"-reps", "0"}, true, nil},
		{"stray argument", []string{"extra"}, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseFlags(tt.args, io.Discard)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && !tt.check(o) {
				t.Errorf("options = %+v", o)
			}
		})
	}
}

func TestScenarioScale(t *testing.T) {
	full, small := scenarios(1), scenarios(0.01)
	for i := range full {
		if full[i].idle() {
			if small[i].requests != full[i].requests {
				t.Errorf("%s: idle session count scaled to %d", full[i].id, small[i].requests)
			}
			continue
		}
		if small[i].requests >= full[i].requests || small[i].requests < 1 {
			t.Errorf("%s: scaled requests %d from %d", full[i].id, small[i].requests, full[i].requests)
		}
	}
}

func TestQuoteArgs(t *testing.T) {
	got := quoteArgs([]string{"-reps", "5", "-caveat", "a busy machine; don't trust it", ""})
	want := []string{"-reps", "5", "-caveat", `'a busy machine; don'\''t trust it'`, "''"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestGoalMet: a goal is judged on the ratio as printed, two decimals.
func TestGoalMet(t *testing.T) {
	rps := goal{metric: mRPS, want: 3}
	cpu := goal{metric: mCPUPerReq, atMost: true, want: 0.6}
	tests := []struct {
		g     goal
		ratio float64
		want  string
	}{
		{rps, 3.2, "met"}, {rps, 2.998, "met"}, {rps, 2.99, "missed"},
		{cpu, 0.5, "met"}, {cpu, 0.6049, "met"}, {cpu, 0.61, "missed"},
	}
	for _, tt := range tests {
		if got := tt.g.met(tt.ratio); got != tt.want {
			t.Errorf("%v at %v: %s, want %s", tt.g, tt.ratio, got, tt.want)
		}
	}
}

package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// spread is the median and range of one metric over the repetitions.
type spread struct {
	med, lo, hi float64
	n           int
}

func spreadOf(vals []float64) spread {
	if len(vals) == 0 {
		return spread{}
	}
	s := slices.Clone(vals)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return spread{med: med, lo: s[0], hi: s[len(s)-1], n: len(s)}
}

// report collects results and renders them.
type report struct {
	scenarios []scenario
	servers   []string // report order
	results   []result
}

// values returns a metric's values for a scenario and server, over the
// runs that succeeded.
func (r *report) values(sc, srv, metric string) []float64 {
	var out []float64
	for _, x := range r.results {
		if x.Scenario != sc || x.Server != srv || x.Error != "" || x.Skipped != "" {
			continue
		}
		if v, ok := x.Metrics[metric]; ok {
			out = append(out, v)
		}
	}
	return out
}

// notes returns why a scenario/server pair has no numbers, or which runs
// failed: "" when every run succeeded.
func (r *report) notes(sc, srv string) (skipped string, failed []string) {
	for _, x := range r.results {
		if x.Scenario != sc || x.Server != srv {
			continue
		}
		switch {
		case x.Skipped != "":
			skipped = x.Skipped
		case x.Error != "":
			failed = append(failed, fmt.Sprintf("rep %d: %s", x.Rep, x.Error))
		}
	}
	return skipped, failed
}

// ran reports whether any run of the pair was attempted.
func (r *report) ran(sc, srv string) bool {
	for _, x := range r.results {
		if x.Scenario == sc && x.Server == srv {
			return true
		}
	}
	return false
}

// ranAny reports whether any run of the scenario was attempted.
func (r *report) ranAny(sc string) bool {
	return slices.ContainsFunc(r.results, func(x result) bool { return x.Scenario == sc })
}

// againstBest compares flowyprompt with the better peer of the scenario,
// mcp-go or go-sdk, whichever has the higher median req/s: "" when either
// side has no numbers.
func (r *report) againstBest(sc scenario, lat string) string {
	fp := spreadOf(r.values(sc.id, flowyprompt, mRPS))
	best, bestRPS := "", spread{}
	for _, p := range []string{mcpGo, goSDK} {
		if s := spreadOf(r.values(sc.id, p, mRPS)); s.n > 0 && (best == "" || s.med > bestRPS.med) {
			best, bestRPS = p, s
		}
	}
	if fp.n == 0 || best == "" {
		return ""
	}
	return fmt.Sprintf("%s: flowyprompt against the better peer, %s: %s its req/s, %s %s its %s", sc.title, best,
		ratio(fp, bestRPS), sc.latency, ratio(spreadOf(r.values(sc.id, flowyprompt, lat)), spreadOf(r.values(sc.id, best, lat))), sc.latency)
}

// format prints v with a precision that suits its size.
func format(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1000:
		return groupThousands(strconv.FormatFloat(v, 'f', 0, 64))
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

func groupThousands(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func (s spread) String() string {
	if s.n == 0 {
		return "–"
	}
	if s.n == 1 || s.lo == s.hi {
		return format(s.med)
	}
	return fmt.Sprintf("%s (%s–%s)", format(s.med), format(s.lo), format(s.hi))
}

// ratio is a/b as "1.23×", or "–".
func ratio(a, b spread) string {
	if a.n == 0 || b.n == 0 || b.med == 0 {
		return "–"
	}
	return strconv.FormatFloat(a.med/b.med, 'f', 2, 64) + "×"
}

// markdown renders the results tables: one for request scenarios and one
// for idle memory, then notes for skipped and failed runs.
func (r *report) markdown() string {
	var b strings.Builder
	var notes []string
	rpc := slices.ContainsFunc(r.scenarios, func(s scenario) bool { return !s.idle() })
	idle := slices.ContainsFunc(r.scenarios, scenario.idle)
	if rpc {
		b.WriteString("| scenario | server | req/s | ×mcp-go | latency µs | ×mcp-go | server CPU µs/req | client CPU µs/req | peak RSS MB | runs |\n")
		b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, sc := range r.scenarios {
			if sc.idle() {
				continue
			}
			lat := mP50
			if sc.latency == "p99" {
				lat = mP99
			}
			baseRPS := spreadOf(r.values(sc.id, baselineServer, mRPS))
			baseLat := spreadOf(r.values(sc.id, baselineServer, lat))
			if sc.note != "" && r.ranAny(sc.id) {
				notes = append(notes, sc.title+": "+sc.note)
			}
			if sc.againstBest {
				if line := r.againstBest(sc, lat); line != "" {
					notes = append(notes, line)
				}
			}
			for _, srv := range r.servers {
				if !r.ran(sc.id, srv) {
					continue
				}
				label := sc.title
				rps := spreadOf(r.values(sc.id, srv, mRPS))
				l := spreadOf(r.values(sc.id, srv, lat))
				skipped, failed := r.notes(sc.id, srv)
				notes = append(notes, noteLines(sc, srv, skipped, failed)...)
				if rps.n == 0 {
					why := "not available"
					if skipped == "" {
						why = "failed"
					}
					fmt.Fprintf(&b, "| %s | %s | %s | | | | | | | 0 |\n", label, srv, why)
					continue
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s %s | %s | %s | %s | %s | %d |\n",
					label, srv, rps, ratio(rps, baseRPS), sc.latency, l, ratio(l, baseLat),
					spreadOf(r.values(sc.id, srv, mCPUPerReq)),
					spreadOf(r.values(sc.id, srv, mCliCPUPerReq)),
					spreadOf(kbToMB(r.values(sc.id, srv, mPeakRSS))), rps.n)
			}
		}
	}
	if rpc {
		if g := r.goalsTable(); g != "" {
			b.WriteString("\n" + g)
		}
	}
	if idle {
		if rpc {
			b.WriteString("\n")
		}
		b.WriteString("| scenario | server | KB per session | ×mcp-go | sessions opened/s | RSS before → after MB | peak RSS MB | runs |\n")
		b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|\n")
		for _, sc := range r.scenarios {
			if !sc.idle() {
				continue
			}
			base := spreadOf(r.values(sc.id, baselineServer, mPerSession))
			for _, srv := range r.servers {
				if !r.ran(sc.id, srv) {
					continue
				}
				per := spreadOf(r.values(sc.id, srv, mPerSession))
				skipped, failed := r.notes(sc.id, srv)
				notes = append(notes, noteLines(sc, srv, skipped, failed)...)
				if per.n == 0 {
					why := "not available"
					if skipped == "" {
						why = "failed"
					}
					fmt.Fprintf(&b, "| %s | %s | %s | | | | | 0 |\n", sc.title, srv, why)
					continue
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s → %s | %s | %d |\n",
					sc.title, srv, per, ratio(per, base),
					spreadOf(r.values(sc.id, srv, mOpenRate)),
					spreadOf(kbToMB(r.values(sc.id, srv, mRSSBefore))),
					spreadOf(kbToMB(r.values(sc.id, srv, mRSSAfter))),
					spreadOf(kbToMB(r.values(sc.id, srv, mPeakRSS))), per.n)
			}
		}
	}
	if len(notes) > 0 {
		b.WriteString("\n")
		for _, n := range notes {
			b.WriteString("- " + n + "\n")
		}
	}
	return b.String()
}

func noteLines(sc scenario, srv, skipped string, failed []string) []string {
	var out []string
	if skipped != "" {
		out = append(out, fmt.Sprintf("%s, %s: not available (%s)", sc.title, srv, oneLine(skipped)))
	}
	for _, f := range failed {
		out = append(out, fmt.Sprintf("%s, %s: failed %s", sc.title, srv, oneLine(f)))
	}
	return out
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return strings.ReplaceAll(s, "|", "\\|")
}

func kbToMB(vals []float64) []float64 {
	out := make([]float64, len(vals))
	for i, v := range vals {
		out[i] = v / 1024
	}
	return out
}

// raw renders every run's headline numbers, in run order, so a reader can
// see the spread behind each median.
func (r *report) raw() string {
	var b strings.Builder
	b.WriteString("| scenario | server | per repetition |\n|---|---|---|\n")
	for _, sc := range r.scenarios {
		for _, srv := range r.servers {
			if !r.ran(sc.id, srv) {
				continue
			}
			var cells []string
			for _, x := range r.results {
				if x.Scenario != sc.id || x.Server != srv {
					continue
				}
				switch {
				case x.Skipped != "":
					cells = append(cells, "n/a")
				case x.Error != "":
					cells = append(cells, "failed")
				case sc.idle():
					cells = append(cells, format(x.Metrics[mPerSession])+" KB")
				default:
					lat := x.Metrics[mP50]
					if sc.latency == "p99" {
						lat = x.Metrics[mP99]
					}
					cells = append(cells, fmt.Sprintf("%s/s %s %sµs", format(x.Metrics[mRPS]), sc.latency, format(lat)))
				}
			}
			fmt.Fprintf(&b, "| %s | %s | %s |\n", sc.id, srv, strings.Join(cells, "; "))
		}
	}
	return b.String()
}

// machine describes the host for the report.
func machine() string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		if m := regexp.MustCompile(`(?m)^model name\s*:\s*(.+)$`).FindSubmatch(b); m != nil {
			cpu = string(bytes.TrimSpace(m[1]))
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if m := regexp.MustCompile(`(?m)^MemTotal:\s*(\d+) kB`).FindSubmatch(b); m != nil {
			kb, _ := strconv.ParseFloat(string(m[1]), 64)
			mem = fmt.Sprintf(", %.0f GB RAM", kb/1024/1024)
		}
	}
	kernel := ""
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = ", Linux " + strings.TrimSpace(string(b))
	}
	return fmt.Sprintf("%s, %d logical CPUs%s%s, %s", cpu, runtime.NumCPU(), mem, kernel, runtime.Version())
}

// libraryVersions reads the harness's go.mod, which requires the peers'
// libraries, for the versions measured.
func libraryVersions(gomod []byte) map[string]string {
	out := map[string]string{}
	for _, mod := range []string{"github.com/mark3labs/mcp-go", "github.com/modelcontextprotocol/go-sdk"} {
		re := regexp.MustCompile(`(?m)^\s*(?:require\s+)?` + regexp.QuoteMeta(mod) + `\s+(v\S+)`)
		if m := re.FindSubmatch(gomod); m != nil {
			out[mod] = string(m[1])
		}
	}
	return out
}

// Markers delimit the generated part of docs/performance.md; the prose
// around them is kept.
const (
	beginMarker = "<!-- mcpbench:begin (generated by cmd/mcpbench; edits between the markers are overwritten) -->"
	endMarker   = "<!-- mcpbench:end -->"
)

// replaceSection puts section between the markers of doc, or appends it
// with markers when doc has none.
func replaceSection(doc, section string) string {
	block := beginMarker + "\n" + strings.TrimRight(section, "\n") + "\n" + endMarker
	i := strings.Index(doc, "<!-- mcpbench:begin")
	j := strings.Index(doc, endMarker)
	if i < 0 || j < i {
		if doc != "" && !strings.HasSuffix(doc, "\n") {
			doc += "\n"
		}
		if doc != "" {
			doc += "\n"
		}
		return doc + block + "\n"
	}
	return doc[:i] + block + doc[j+len(endMarker):]
}

// runInfo is what the generated section says about the run itself.
type runInfo struct {
	date     time.Time
	machine  string
	command  string
	versions map[string]string
	reps     int
	elapsed  time.Duration
	settings string
	caveat   string
}

func (r *report) section(info runInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### Run of %s\n\n", info.date.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "- Machine: %s\n", info.machine)
	reps := fmt.Sprintf("%d repetitions", info.reps)
	if info.reps == 1 {
		reps = "1 repetition"
	}
	fmt.Fprintf(&b, "- Command: `%s` (%s, %s in all)\n", info.command, reps, info.elapsed.Round(time.Second))
	fmt.Fprintf(&b, "- Libraries: mcp-go %s, go-sdk %s\n", orQ(info.versions["github.com/mark3labs/mcp-go"]), orQ(info.versions["github.com/modelcontextprotocol/go-sdk"]))
	if info.settings != "" {
		fmt.Fprintf(&b, "- Settings: %s\n", info.settings)
	}
	if info.caveat != "" {
		fmt.Fprintf(&b, "- Caveat: %s\n", info.caveat)
	}
	b.WriteString("\nMedians over the repetitions, with min–max in brackets; ×mcp-go is the ratio of medians to mcp-go's (for req/s higher is better, for latency and memory lower is better).\n\n")
	b.WriteString(r.markdown())
	b.WriteString("\n<details><summary>Raw numbers, every run in order</summary>\n\n")
	b.WriteString(r.raw())
	b.WriteString("\n</details>\n")
	return b.String()
}

func orQ(s string) string {
	if s == "" {
		return "?"
	}
	return s
}

package templates

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/google/go-cmp/cmp"
)

// tmpl returns a valid template file body named name whose only section is
// content.
func tmpl(name, content string) []byte {
	return []byte(`{"metadata":{"name":"` + name + `","description":"about ` + name + `","version":"1.0.0"},` +
		`"variables":[],"results":[{"name":"S","content":` + quote(content) + `}]}`)
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

var quiet = slog.New(slog.DiscardHandler)

func fixedNow() time.Time { return time.Date(2025, 1, 6, 12, 0, 0, 0, time.UTC) }

func names(es []*Entry) []string {
	out := []string{}
	for _, e := range es {
		out = append(out, e.Template.Metadata.Name)
	}
	return out
}

type invalidRow struct {
	Path string
	Code string
	Kept bool
}

func invalidRows(c *Catalog) []invalidRow {
	out := []invalidRow{}
	for _, inv := range c.Invalid() {
		out = append(out, invalidRow{inv.Path, fault.CodeOf(inv.Err), inv.Kept})
	}
	return out
}

func TestBuild(t *testing.T) {
	refused := errors.New("refused by the source")
	files := []File{
		{Path: "t/zeta.json", Data: tmpl("zeta", "z")},
		{Path: "t/Alpha.json", Data: tmpl("Alpha", "a")},
		{Path: "t/README.md", Data: []byte("# not a template")},
		{Path: "t/.draft.json", Data: tmpl("draft", "d")},
		{Path: "t/broken.json", Data: []byte("{")},
		{Path: "t/big.json", Err: TooLarge("t/big.json", 200000, DefaultMaxFileSize)},
		{Path: "t/refused.json", Err: refused},
		{Path: "t/zz-dup.json", Data: tmpl("zeta", "second zeta")},
		{Path: "t/a-first.json", Data: tmpl("beta", "b")},
		{Path: "../escape.json", Data: tmpl("escape", "e")},
		{Path: "t/./dot.json", Data: tmpl("dot", "d")},
		{Path: "/abs/abs.json", Data: tmpl("abs", "a")},
		{Path: `t\win.json`, Data: tmpl("win", "w")},
		{Path: "t/ctl\x01.json", Data: tmpl("ctl", "c")},
	}
	c := Build(files, BuildOptions{Info: SourceInfo{Kind: "test", Location: "mem"}, Logger: quiet, Now: fixedNow})

	if diff := cmp.Diff([]string{"Alpha", "beta", "zeta"}, names(c.Templates())); diff != "" {
		t.Errorf("templates mismatch (-want +got):\n%s", diff)
	}
	wantInvalid := []invalidRow{
		{"../escape.json", fault.InvalidTemplate, false},
		{"/abs/abs.json", fault.InvalidTemplate, false},
		{"t/./dot.json", fault.InvalidTemplate, false},
		{"t/big.json", fault.TemplateTooLarge, false},
		{"t/broken.json", fault.InvalidTemplate, false},
		{"t/ctl\x01.json", fault.InvalidTemplate, false},
		{"t/refused.json", fault.Internal, false},
		{"t/zz-dup.json", fault.InvalidTemplate, false},
		{`t\win.json`, fault.InvalidTemplate, false},
	}
	if diff := cmp.Diff(wantInvalid, invalidRows(c)); diff != "" {
		t.Errorf("invalid mismatch (-want +got):\n%s", diff)
	}
	for _, inv := range c.Invalid() {
		if inv.Path == "t/refused.json" && !errors.Is(inv.Err, refused) {
			t.Errorf("File.Err not kept: %v", inv.Err)
		}
		if inv.Path == "t/zz-dup.json" {
			f := fault.As(inv.Err)
			if !strings.Contains(f.Why, "duplicate name") || f.Details["firstPath"] != "t/zeta.json" {
				t.Errorf("duplicate error = %+v", f)
			}
		}
	}

	e, ok := c.Lookup("zeta")
	if !ok {
		t.Fatal("Lookup(zeta) failed")
	}
	sum := sha256.Sum256(files[0].Data)
	if e.Path != "t/zeta.json" || e.Digest != hex.EncodeToString(sum[:]) || !bytes.Equal(e.Raw, files[0].Data) {
		t.Errorf("entry = path %s digest %s", e.Path, e.Digest)
	}
	if _, ok := c.Lookup("ZETA"); ok {
		t.Error("Lookup is case-insensitive")
	}
	if c.Len() != 3 || !c.LoadedAt().Equal(fixedNow()) || c.Info().Kind != "test" || c.Stale() != nil {
		t.Errorf("Len %d LoadedAt %v Info %+v Stale %v", c.Len(), c.LoadedAt(), c.Info(), c.Stale())
	}

	// Callers get copies: mutating them cannot corrupt the shared catalog.
	c.Templates()[0] = nil
	c.Invalid()[0].Path = "x"
	if c.Templates()[0] == nil || c.Invalid()[0].Path != "../escape.json" {
		t.Error("Templates or Invalid return shared slices")
	}
}

func TestBuildOrderIndependent(t *testing.T) {
	a := []File{{Path: "1.json", Data: tmpl("same", "one")}, {Path: "2.json", Data: tmpl("same", "two")}}
	b := []File{a[1], a[0]}
	for _, files := range [][]File{a, b} {
		c := Build(files, BuildOptions{Logger: quiet})
		e, _ := c.Lookup("same")
		if e.Path != "1.json" {
			t.Errorf("kept %s, want the first by path", e.Path)
		}
	}
}

func TestBuildEmptyNeverNil(t *testing.T) {
	c := Build(nil, BuildOptions{Logger: quiet})
	if c.Templates() == nil || c.Invalid() == nil || c.Len() != 0 {
		t.Error("empty catalog returns nil slices")
	}
	var nilCat *Catalog
	if nilCat.Templates() == nil || nilCat.Len() != 0 || nilCat.Stale() != nil {
		t.Error("nil catalog misbehaves")
	}
	if _, ok := nilCat.Lookup("x"); ok {
		t.Error("nil catalog finds things")
	}
}

// TestLogProblems: a problem is logged when it appears and when it is
// resolved, never for a catalog that still has it; Build logs nothing.
func TestLogProblems(t *testing.T) {
	warned := File{Path: "w.json", Data: []byte(`{"metadata":{"name":"w","description":"d","version":"1.0.0"},` +
		`"variables":[{"name":"spare","type":"string","description":"d"}],"results":[{"name":"S","content":"c"}]}`)}
	fixed := File{Path: "w.json", Data: []byte(`{"metadata":{"name":"w","description":"d","version":"1.0.0"},` +
		`"variables":[],"results":[{"name":"S","content":"c"}]}`)}
	bad := File{Path: "bad.json", Data: []byte(`{"metadata":{}}`)}
	good := File{Path: "bad.json", Data: tmpl("bad", "x")}
	other := File{Path: "o.json", Data: tmpl("o", "x")}
	build := func(files ...File) *Catalog {
		var buf bytes.Buffer
		c := Build(files, BuildOptions{Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
		if buf.Len() > 0 {
			t.Errorf("Build logged: %s", buf.String())
		}
		return c
	}
	type rec struct {
		Level, Msg, Template, Variable, Kind, Path, Code string
	}
	first := build(warned, bad)
	kept := build(warned).WithInvalid([]Invalid{{Path: "w.json", Err: errors.New("half-written"), Kept: true}})
	tests := []struct {
		name     string
		old, cur *Catalog
		want     []rec
	}{
		{name: "first load", old: nil, cur: first, want: []rec{
			{Level: "WARN", Msg: "template warning", Template: "w", Variable: "spare", Kind: WarnUnusedVariable, Path: "w.json"},
			{Level: "WARN", Msg: "invalid template left out", Path: "bad.json", Code: fault.InvalidTemplate},
		}},
		{name: "an unrelated change", old: first, cur: build(warned, bad, other)},
		{name: "resolved", old: first, cur: build(fixed, good), want: []rec{
			{Level: "INFO", Msg: "template file is valid again", Template: "bad", Path: "bad.json"},
			{Level: "INFO", Msg: "template warning resolved", Template: "w", Variable: "spare", Kind: WarnUnusedVariable, Path: "w.json"},
		}},
		{name: "invalid file deleted", old: first, cur: build(warned), want: []rec{
			{Level: "INFO", Msg: "invalid template file is gone", Path: "bad.json"},
		}},
		{name: "half-written, last version kept", old: build(warned), cur: kept, want: []rec{
			{Level: "WARN", Msg: "template file is invalid; serving its last valid version", Template: "w", Path: "w.json", Code: fault.Internal},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			LogProblems(slog.New(slog.NewJSONHandler(&buf, nil)), tt.old, tt.cur)
			var got []rec
			for _, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
				if len(line) == 0 {
					continue
				}
				var r rec
				if err := json.Unmarshal(line, &r); err != nil {
					t.Fatal(err)
				}
				got = append(got, r)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("log mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWithStale(t *testing.T) {
	c := Build([]File{{Path: "a.json", Data: tmpl("a", "x")}}, BuildOptions{Logger: quiet})
	s := &Staleness{Since: fixedNow(), Reason: "GitHub unreachable", Code: fault.NetworkError}
	stale := c.WithStale(s)
	if stale.Stale() != s || c.Stale() != nil {
		t.Errorf("WithStale changed the original or lost the mark")
	}
	if stale.Len() != 1 || stale.WithStale(nil).Stale() != nil {
		t.Error("stale copy lost its templates or cannot be made fresh")
	}
}

func TestSuggest(t *testing.T) {
	var files []File
	for _, n := range []string{"Brand_Positioning_Strategy", "Blog_Outline", "Bug_Triage", "Code_Review", "Commit_Message", "SQL_Review", "ab"} {
		files = append(files, File{Path: n + ".json", Data: tmpl(n, "x")})
	}
	c := Build(files, BuildOptions{Logger: quiet})
	tests := []struct {
		query string
		max   int
		want  []string
	}{
		{"brand_positioning_strategy", 3, []string{"Brand_Positioning_Strategy"}},
		{"brand positioning strategy", 3, []string{"Brand_Positioning_Strategy"}},
		{"Brand_Positioning", 3, []string{"Brand_Positioning_Strategy"}},
		{"positioning", 3, []string{"Brand_Positioning_Strategy"}},
		{"review", 3, []string{"Code_Review", "SQL_Review"}},
		{"Code_Reveiw", 3, []string{"Code_Review"}},
		{"Bug_Triag", 3, []string{"Bug_Triage"}},
		{"Blog_Outlien", 3, []string{"Blog_Outline"}},
		{"review", 1, []string{"Code_Review"}},
		{"Code_Review", 3, []string{}}, // an exact name suggests nothing
		{"zzzzzzzzzz", 3, []string{}},
		{"a", 3, []string{"ab"}},
		{"x", 3, []string{}},
		{"", 3, []string{}},
		{"review", 0, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, c.Suggest(tt.query, tt.max)); diff != "" {
				t.Errorf("Suggest(%q) mismatch (-want +got):\n%s", tt.query, diff)
			}
		})
	}
}

func TestDiff(t *testing.T) {
	old := Build([]File{
		{Path: "a.json", Data: tmpl("a", "1")},
		{Path: "b.json", Data: tmpl("b", "1")},
		{Path: "c.json", Data: tmpl("c", "1")},
	}, BuildOptions{Logger: quiet})
	next := Build([]File{
		{Path: "a.json", Data: tmpl("a", "1")},
		{Path: "b.json", Data: tmpl("b", "2")},
		{Path: "d.json", Data: tmpl("d", "1")},
	}, BuildOptions{Logger: quiet})
	// Flows are told apart from templates: a flow's file changing, and
	// nothing else, is a change too.
	withFlows := func(flows ...File) *Catalog {
		return Build(append([]File{flowTemplate("outline", "subject")}, flows...), BuildOptions{Logger: quiet})
	}
	step := func(subject string) string {
		return `[{"name":"s","template":"outline","variables":{"subject":"` + subject + `"}}]`
	}
	oldFlows := withFlows(flowFile("fa", step("x")), flowFile("fb", step("x")), flowFile("fc", step("x")))
	nextFlows := withFlows(flowFile("fa", step("x")), flowFile("fb", step("{{topic}}")), flowFile("fd", step("x")))
	noTemplates := Changes{Added: []string{}, Changed: []string{}, Removed: []string{}}
	flowChanges := func(added, changed, removed []string) Changes {
		ch := noTemplates
		ch.Flows = FlowChanges{Added: added, Changed: changed, Removed: removed}
		return ch
	}
	tests := []struct {
		name      string
		old, next *Catalog
		want      Changes
		empty     bool
	}{
		{"changes", old, next, Changes{Added: []string{"d"}, Changed: []string{"b"}, Removed: []string{"c"}}, false},
		{"reverse", next, old, Changes{Added: []string{"c"}, Changed: []string{"b"}, Removed: []string{"d"}}, false},
		{"same", old, old, Changes{Added: []string{}, Changed: []string{}, Removed: []string{}}, true},
		{"from nil", nil, old, Changes{Added: []string{"a", "b", "c"}, Changed: []string{}, Removed: []string{}}, false},
		{"to nil", old, nil, Changes{Added: []string{}, Changed: []string{}, Removed: []string{"a", "b", "c"}}, false},
		{"flow changes only", oldFlows, nextFlows, flowChanges([]string{"fd"}, []string{"fb"}, []string{"fc"}), false},
		{"flow changes reversed", nextFlows, oldFlows, flowChanges([]string{"fc"}, []string{"fb"}, []string{"fd"}), false},
		{"flows same", oldFlows, withFlows(flowFile("fa", step("x")), flowFile("fb", step("x")), flowFile("fc", step("x"))), noTemplates, true},
		{"flow added", withFlows(), withFlows(flowFile("fa", step("x"))), flowChanges([]string{"fa"}, []string{}, []string{}), false},
		{"flow removed", withFlows(flowFile("fa", step("x"))), withFlows(), flowChanges([]string{}, []string{}, []string{"fa"}), false},
		{"flows from nil", nil, oldFlows,
			Changes{Added: []string{"outline"}, Changed: []string{}, Removed: []string{}, Flows: FlowChanges{Added: []string{"fa", "fb", "fc"}, Changed: []string{}, Removed: []string{}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Diff(tt.old, tt.next)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Diff mismatch (-want +got):\n%s", diff)
			}
			if got.Empty() != tt.empty {
				t.Errorf("Empty() = %v", got.Empty())
			}
		})
	}
	b, _ := json.Marshal(Diff(old, old))
	if string(b) != `{"added":[],"changed":[],"removed":[]}` {
		t.Errorf("empty changes marshal to %s", b)
	}
	b, _ = json.Marshal(Diff(oldFlows, withFlows(flowFile("fa", step("x")))))
	if want := `{"added":[],"changed":[],"removed":[],"flows":{"added":[],"changed":[],"removed":["fb","fc"]}}`; string(b) != want {
		t.Errorf("flow changes marshal to %s, want %s", b, want)
	}
}

func TestNotFound(t *testing.T) {
	c := Build([]File{{Path: "Code_Review.json", Data: tmpl("Code_Review", "x")}},
		BuildOptions{Logger: quiet, Info: SourceInfo{Kind: "github", Location: "https://github.com/o/r", Ref: "main"}})
	tests := []struct {
		name     string
		query    string
		cat      *Catalog
		sugg     []string
		howStart string
		why      string
	}{
		{"with suggestion", "code_review", c, []string{"Code_Review"}, `did you mean "Code_Review"?`,
			`none of the 1 templates in github (https://github.com/o/r@main) has metadata.name "code_review"`},
		{"without suggestion", "nothing_like_it", c, []string{}, "list the available names",
			`none of the 1 templates in github (https://github.com/o/r@main) has metadata.name "nothing_like_it"`},
		{"nil catalog", "x", nil, []string{}, "list the available names", `no template has metadata.name "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := NotFound(tt.query, tt.cat)
			if f.Code != fault.TemplateNotFound || f.What != `template "`+tt.query+`" not found` {
				t.Errorf("code %s what %q", f.Code, f.What)
			}
			if diff := cmp.Diff(tt.sugg, f.Suggestions); diff != "" {
				t.Errorf("suggestions mismatch (-want +got):\n%s", diff)
			}
			if !strings.HasPrefix(f.How, tt.howStart) || !strings.Contains(f.How, "flowyprompt_list_templates") || !strings.Contains(f.How, "prompts/list") {
				t.Errorf("How = %q", f.How)
			}
			if f.Why != tt.why {
				t.Errorf("Why = %q, want %q", f.Why, tt.why)
			}
		})
	}
}

func TestValidateName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
		why  string
	}{
		{"Brand_Positioning_Strategy", true, ""},
		{"a-b_c9", true, ""},
		{strings.Repeat("a", MaxNameLength), true, ""},
		{"", false, "the name is empty"},
		{strings.Repeat("a", MaxNameLength+1), false, "the name is 129 characters long; the maximum is 128"},
		{"../secrets", false, `'.' is not allowed in a template name`},
		{"/etc/passwd", false, `'/' is not allowed in a template name`},
		{"has space", false, `' ' is not allowed in a template name`},
		{"브랜드", false, `'브' is not allowed in a template name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateName(tt.name)
			if tt.ok {
				if err != nil {
					t.Errorf("ValidateName(%q) = %v", tt.name, err)
				}
				return
			}
			f := fault.As(err)
			if f == nil || f.Code != fault.InvalidArgument || f.Why != tt.why || f.How == "" {
				t.Errorf("ValidateName(%q) = %+v, want why %q", tt.name, f, tt.why)
			}
		})
	}
}

package templates

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// guard bounds each wait for a watch to take or pass on a change: a guard
// against a hang, far above what a loaded machine takes, never a pace.
const guard = 30 * time.Second

// watchedSource is a fakeSource that also watches: push hands a new
// catalog to its watcher, as a folder or GitHub source does on a change.
type watchedSource struct {
	fakeSource
	fresh  time.Duration
	stale  *Staleness
	pushes chan *Catalog
}

func newWatched(files ...File) *watchedSource {
	s := &watchedSource{pushes: make(chan *Catalog)}
	s.set(nil, files...)
	return s
}

func (s *watchedSource) FreshFor() time.Duration { return s.fresh }

func (s *watchedSource) Load(ctx context.Context) (*Catalog, error) {
	c, err := s.fakeSource.Load(ctx)
	if c != nil && s.stale != nil {
		c = c.WithStale(s.stale)
	}
	return c, err
}

func (s *watchedSource) Watch(ctx context.Context, onChange func(*Catalog)) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case c := <-s.pushes:
			onChange(c)
		}
	}
}

func (s *watchedSource) push(t *testing.T, files ...File) {
	t.Helper()
	s.set(nil, files...)
	c, err := s.Load(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	select {
	case s.pushes <- c:
	case <-time.After(guard):
		t.Fatal("the composite is not watching")
	}
}

func TestCompositeNames(t *testing.T) {
	team := newWatched(File{Path: "Code_Review.json", Data: tmpl("Code_Review", "team review")},
		File{Path: "Only_Team.json", Data: tmpl("Only_Team", "t")})
	platform := newWatched(File{Path: "sub/Code_Review.json", Data: tmpl("Code_Review", "platform review")},
		File{Path: "Incident_Update.json", Data: tmpl("Incident_Update", "i")})
	c, err := NewComposite([]Member{{"team", team}, {"platform", platform}}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := c.Load(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"platform/Code_Review", "platform/Incident_Update", "team/Code_Review", "team/Only_Team"}, names(cat.Templates())); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	tests := []struct {
		name, wantName, wantPath, wantText string
		found                              bool
	}{
		{"team/Code_Review", "team/Code_Review", "team/Code_Review.json", "team review", true},
		{"platform/Code_Review", "platform/Code_Review", "platform/sub/Code_Review.json", "platform review", true},
		// The bare name goes to the first source that defines it.
		{"Code_Review", "team/Code_Review", "team/Code_Review.json", "team review", true},
		{"Incident_Update", "platform/Incident_Update", "platform/Incident_Update.json", "i", true},
		{"team/Incident_Update", "", "", "", false},
		{"other/Code_Review", "", "", "", false},
		{"code_review", "", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, ok := cat.Lookup(tt.name)
			if ok != tt.found {
				t.Fatalf("Lookup(%q) found = %v, want %v", tt.name, ok, tt.found)
			}
			if !ok {
				return
			}
			if e.Template.Metadata.Name != tt.wantName || e.Path != tt.wantPath || !bytes.Contains(e.Raw, []byte(tt.wantText)) {
				t.Errorf("Lookup(%q) = %s at %s, want %s at %s with %q", tt.name, e.Template.Metadata.Name, e.Path, tt.wantName, tt.wantPath, tt.wantText)
			}
		})
	}
	if diff := cmp.Diff([]Conflict{{Name: "Code_Review", Namespaces: []string{"team", "platform"}}}, cat.Conflicts()); diff != "" {
		t.Errorf("conflicts (-want +got):\n%s", diff)
	}
	if got := cat.Suggest("Incident_Updat", 1); len(got) != 1 || got[0] != "platform/Incident_Update" {
		t.Errorf("Suggest(Incident_Updat) = %v, want platform/Incident_Update", got)
	}
	info := cat.Info()
	if info.Kind != "multi" || info.Location != "team, platform" || len(info.Members) != 2 || info.Members[1].Namespace != "platform" {
		t.Errorf("info = %+v", info)
	}
	// The member's own catalog is untouched: its readers still see bare names.
	if e, _ := c.last[0].Lookup("Code_Review"); e.Template.Metadata.Name != "Code_Review" {
		t.Errorf("the member's template was renamed to %s", e.Template.Metadata.Name)
	}
}

func TestCompositeConflictLogged(t *testing.T) {
	a := newWatched(File{Path: "X.json", Data: tmpl("X", "a")})
	b := newWatched(File{Path: "X.json", Data: tmpl("X", "b")})
	c, err := NewComposite([]Member{{"a", a}, {"b", b}}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	l, buf := loadLogged(t, c)
	for _, want := range []string{"level=WARN", "template name conflict", "template=X", "sources=\"[a b]\""} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, buf.String())
		}
	}
	buf.Reset()
	if _, err := l.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 0 {
		t.Errorf("an unchanged conflict is logged again:\n%s", buf.String())
	}
	b.set(nil, File{Path: "Y.json", Data: tmpl("Y", "b")})
	if _, err := l.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if want := "level=INFO msg=\"template name conflict resolved\" template=X"; !strings.Contains(buf.String(), want) {
		t.Errorf("log lacks %q:\n%s", want, buf.String())
	}
	if got := l.Catalog().Conflicts(); len(got) != 0 {
		t.Errorf("conflicts after the fix = %+v", got)
	}
}

func TestCompositeWatch(t *testing.T) {
	a := newWatched(File{Path: "A.json", Data: tmpl("A", "1")})
	b := newWatched(File{Path: "B.json", Data: tmpl("B", "1")})
	plain := &fakeSource{}
	plain.set(nil, File{Path: "P.json", Data: tmpl("P", "1")})
	c, err := NewComposite([]Member{{"a", a}, {"b", b}, {"p", plain}}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	l := NewLibrary(c, quiet)
	if err := l.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Listeners must not block: room for more changes than the test makes,
	// so an unwanted one is seen rather than stalling the watch.
	changes := make(chan Changes, 8)
	l.OnChange(func(_, _ *Catalog, ch Changes) { changes <- ch })
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()

	// Each member's watch runs on its own goroutine: the second push waits
	// until the first change is out, so the order below is the pushes'.
	var got []Changes
	next := func() {
		t.Helper()
		select {
		case ch := <-changes:
			got = append(got, ch)
		case <-time.After(guard):
			t.Fatalf("%d changes seen, want %d", len(got), len(got)+1)
		}
	}
	b.push(t, File{Path: "B.json", Data: tmpl("B", "2")})
	next()
	a.push(t, File{Path: "A.json", Data: tmpl("A", "1")}, File{Path: "A2.json", Data: tmpl("A2", "1")})
	next()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	// Run has returned: no change is on its way.
	close(changes)
	for ch := range changes {
		got = append(got, ch)
	}
	want := []Changes{
		{Added: []string{}, Changed: []string{"b/B"}, Removed: []string{}},
		{Added: []string{"a/A2"}, Changed: []string{}, Removed: []string{}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	if _, ok := l.Catalog().Lookup("p/P"); !ok {
		t.Error("the member without a watcher is gone from the combined catalog")
	}
}

func TestCompositeFreshnessAndStaleness(t *testing.T) {
	since := time.Date(2025, 1, 6, 12, 0, 0, 0, time.UTC)
	a := newWatched(File{Path: "A.json", Data: tmpl("A", "1")})
	a.fresh = 10 * time.Minute
	b := newWatched(File{Path: "B.json", Data: tmpl("B", "1")})
	b.fresh = 2 * time.Minute
	b.stale = &Staleness{Since: since, Reason: "GitHub is down", Code: "NETWORK_ERROR"}
	c, err := NewComposite([]Member{{"a", a}, {"b", b}}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.FreshFor(); got != 2*time.Minute {
		t.Errorf("FreshFor = %v, want the shortest, 2m", got)
	}
	cat, err := c.Load(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	s := cat.Stale()
	if s == nil || s.Code != "NETWORK_ERROR" || s.Reason != "source b: GitHub is down" || !s.Since.Equal(since) {
		t.Errorf("stale = %+v", s)
	}
	if m := cat.Info().Members; m[0].Stale != nil || m[1].Stale == nil {
		t.Errorf("members' staleness = %+v, %+v; want only b stale", m[0].Stale, m[1].Stale)
	}
}

func TestCompositeLoadFails(t *testing.T) {
	a := newWatched(File{Path: "A.json", Data: tmpl("A", "1")})
	b := &fakeSource{}
	b.set(errors.New("folder missing"))
	c, err := NewComposite([]Member{{"a", a}, {"b", b}}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := c.Load(t.Context())
	if cat != nil || err == nil || err.Error() != "source b: folder missing" {
		t.Errorf("Load = %v, %v; want no catalog and source b's error", cat, err)
	}
}

func TestNewCompositeRefuses(t *testing.T) {
	src := &fakeSource{}
	tests := []struct {
		name    string
		members []Member
		want    string
	}{
		{"none", nil, "at least one member"},
		{"empty namespace", []Member{{"", src}}, "the namespace is empty"},
		{"slash", []Member{{"a/b", src}}, `'/' is not allowed in a namespace`},
		{"twice", []Member{{"a", src}, {"a", src}}, `two sources are named "a"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewComposite(tt.members, quiet)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NewComposite = %v, want an error with %q", err, tt.want)
			}
		})
	}
}

func TestCompositeResources(t *testing.T) {
	withRes := []byte(`{"metadata":{"name":"R","description":"d","version":"1.0.0"},"variables":[],` +
		`"results":[{"name":"S","content":"x"}],"resources":["guides/style.md","template://Other","template://Missing"]}`)
	a := newWatched(File{Path: "R.json", Data: withRes}, File{Path: "Other.json", Data: tmpl("Other", "o")})
	c, err := NewComposite([]Member{{"a", a}}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := c.Load(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	e, ok := cat.Lookup("a/R")
	if !ok {
		t.Fatalf("a/R is not served: %v", cat.Invalid())
	}
	want := []string{"a/guides/style.md", "template://a/Other", "template://Missing"}
	if diff := cmp.Diff(want, e.Template.Resources); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	if _, _, err := c.ReadResource(t.Context(), "b/guides/style.md"); err == nil || !strings.Contains(err.Error(), "cannot read") {
		t.Errorf("ReadResource of an unknown namespace = %v", err)
	}
}

// TestCompositeRefreshKeepsAFailedMember: a member that fails to refresh
// keeps serving its last catalog; the failure is returned, naming it.
func TestCompositeRefreshKeepsAFailedMember(t *testing.T) {
	a := newWatched(File{Path: "A.json", Data: tmpl("A", "1")})
	b := &fakeSource{}
	b.set(nil, File{Path: "B.json", Data: tmpl("B", "1")})
	c, err := NewComposite([]Member{{"a", a}, {"b", b}}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	l := NewLibrary(c, quiet)
	if err := l.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	a.set(nil, File{Path: "A.json", Data: tmpl("A", "2")})
	b.set(errors.New("GitHub is down"))
	ch, err := l.Refresh(t.Context())
	if err == nil || err.Error() != "source b: GitHub is down" {
		t.Errorf("Refresh error = %v, want source b's", err)
	}
	var me *MemberError
	if !errors.As(err, &me) || me.Namespace != "b" {
		t.Errorf("the error does not say which source failed: %#v", err)
	}
	if !ch.Empty() {
		t.Errorf("a failed refresh reported changes %+v", ch)
	}
	cat := l.Catalog()
	if e, ok := cat.Lookup("a/A"); !ok || !bytes.Contains(e.Raw, []byte(`"2"`)) {
		t.Error("the member that refreshed is not served at its new version")
	}
	if _, ok := cat.Lookup("B"); !ok {
		t.Error("the member that failed is no longer served")
	}
}

// TestCompositeFlows: each member's flows under its namespace, running
// that member's templates; bare flow names by the members' order; a flow
// name two members define reported as a flow's conflict.
func TestCompositeFlows(t *testing.T) {
	outlineStep := `[{"name":"s","template":"outline","variables":{"subject":"{{topic}}"}}]`
	team := newWatched(flowTemplate("outline", "subject"), flowTemplate("draft", "outline"),
		flowFile("post", outlineStep),
		flowFile("team_only", `[{"name":"s","template":"draft","variables":{"outline":"{{topic}}"}}]`),
		flowFile("broken", `[{"name":"s","template":"nope"}]`))
	platform := newWatched(flowTemplate("outline", "subject"),
		flowFile("post", outlineStep),
		flowFile("ops", outlineStep),
		// draft is the team's: a member's flow never runs another
		// member's template, so this one is invalid.
		flowFile("cross", `[{"name":"s","template":"draft","variables":{"outline":"{{topic}}"}}]`))
	c, err := NewComposite([]Member{{"team", team}, {"platform", platform}}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	l, buf := loadLogged(t, c)
	cat := l.Catalog()
	var got []string
	for _, fe := range cat.Flows() {
		got = append(got, fe.Flow.Name)
	}
	if diff := cmp.Diff([]string{"platform/ops", "platform/post", "team/post", "team/team_only"}, got); diff != "" {
		t.Errorf("Flows (-want +got):\n%s", diff)
	}

	tests := []struct {
		name      string
		wantName  string
		wantPath  string
		wantSteps []string // the steps' templates
		found     bool
	}{
		{"team/post", "team/post", "team/flows/post.json", []string{"team/outline"}, true},
		{"platform/post", "platform/post", "platform/flows/post.json", []string{"platform/outline"}, true},
		// The bare name goes to the first member that defines it.
		{"post", "team/post", "team/flows/post.json", []string{"team/outline"}, true},
		{"ops", "platform/ops", "platform/flows/ops.json", []string{"platform/outline"}, true},
		{"team_only", "team/team_only", "team/flows/team_only.json", []string{"team/draft"}, true},
		{"team/ops", "", "", nil, false},
		{"other/post", "", "", nil, false},
		{"cross", "", "", nil, false},
		{"broken", "", "", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fe, ok := cat.LookupFlow(tt.name)
			if ok != tt.found {
				t.Fatalf("LookupFlow(%q) found = %v, want %v", tt.name, ok, tt.found)
			}
			if !ok {
				return
			}
			var steps []string
			for _, s := range fe.Flow.Steps {
				steps = append(steps, s.Template)
				// The step's template is its member's, through the
				// combined catalog's Lookup.
				e, ok := cat.Lookup(s.Template)
				if !ok {
					t.Errorf("step template %s is not in the combined catalog", s.Template)
				} else if ns, _, _ := strings.Cut(tt.wantName, "/"); !strings.HasPrefix(e.Path, ns+"/") {
					t.Errorf("step template %s is served from %s, want a file of %s", s.Template, e.Path, ns)
				}
			}
			if fe.Flow.Name != tt.wantName || fe.Path != tt.wantPath {
				t.Errorf("LookupFlow(%q) = %s at %s, want %s at %s", tt.name, fe.Flow.Name, fe.Path, tt.wantName, tt.wantPath)
			}
			if diff := cmp.Diff(tt.wantSteps, steps); diff != "" {
				t.Errorf("step templates (-want +got):\n%s", diff)
			}
			// The digest is the member's file's, so a flow handle still
			// tells its versions apart.
			ns, bare, _ := strings.Cut(tt.wantName, "/")
			member := map[string]*Catalog{"team": c.last[0], "platform": c.last[1]}[ns]
			if mf, _ := member.LookupFlow(bare); mf.Digest != fe.Digest {
				t.Errorf("digest %s, want the member's %s", fe.Digest, mf.Digest)
			}
		})
	}

	// The members' flows are shared with their readers: untouched.
	if mf, _ := c.last[0].LookupFlow("post"); mf.Flow.Name != "post" || mf.Flow.Steps[0].Template != "outline" {
		t.Errorf("the member's flow was changed: %s, step template %s", mf.Flow.Name, mf.Flow.Steps[0].Template)
	}

	wantConflicts := []Conflict{
		{Name: "outline", Namespaces: []string{"team", "platform"}},
		{Name: "post", Namespaces: []string{"team", "platform"}, Flow: true},
	}
	if diff := cmp.Diff(wantConflicts, cat.Conflicts()); diff != "" {
		t.Errorf("conflicts (-want +got):\n%s", diff)
	}
	if msg := cat.Conflicts()[1].Error(); !strings.HasPrefix(msg, `flow "post" is defined by the sources team, platform`) {
		t.Errorf("flow conflict says %q", msg)
	}
	for _, want := range []string{`msg="flow name conflict" flow=post`, `msg="template name conflict" template=outline`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, buf.String())
		}
	}

	var invalid []string
	for _, inv := range cat.Invalid() {
		invalid = append(invalid, inv.Path)
	}
	if diff := cmp.Diff([]string{"platform/flows/cross.json", "team/flows/broken.json"}, invalid); diff != "" {
		t.Errorf("invalid (-want +got):\n%s", diff)
	}

	// A flow changed in one member is a change of its namespaced flow.
	buf.Reset()
	platform.set(nil, flowTemplate("outline", "subject"), flowFile("ops", outlineStep))
	ch, err := l.Refresh(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := Changes{Added: []string{}, Changed: []string{}, Removed: []string{},
		Flows: FlowChanges{Added: []string{}, Changed: []string{}, Removed: []string{"platform/post"}}}
	if diff := cmp.Diff(want, ch); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	if want := `msg="flow name conflict resolved" flow=post`; !strings.Contains(buf.String(), want) {
		t.Errorf("log lacks %q:\n%s", want, buf.String())
	}
	if fe, ok := l.Catalog().LookupFlow("post"); !ok || fe.Flow.Name != "team/post" {
		t.Errorf("LookupFlow(post) after the change = %v, %v", fe, ok)
	}
}

// loadLogged loads a library of c whose log the test reads.
func loadLogged(t *testing.T, c *Composite) (*Library, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	l := NewLibrary(c, slog.New(slog.NewTextHandler(&buf, nil)))
	if err := l.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	return l, &buf
}

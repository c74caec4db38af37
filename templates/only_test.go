package templates

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCatalogOnly(t *testing.T) {
	since := time.Date(2025, 1, 6, 12, 0, 0, 0, time.UTC)
	team := newWatched(File{Path: "Code_Review.json", Data: tmpl("Code_Review", "team review")},
		File{Path: "Only_Team.json", Data: tmpl("Only_Team", "t")},
		flowTemplate("outline", "subject"),
		flowFile("post", `[{"name":"s","template":"outline","variables":{"subject":"{{topic}}"}}]`),
		File{Path: "Broken.json", Data: []byte(`{`)})
	ops := newWatched(File{Path: "Code_Review.json", Data: tmpl("Code_Review", "ops review")},
		File{Path: "Runbook.json", Data: tmpl("Runbook", "r")},
		flowTemplate("outline", "subject"),
		flowFile("post", `[{"name":"s","template":"outline","variables":{"subject":"{{topic}}"}}]`))
	ops.stale = &Staleness{Since: since, Reason: "GitHub is down", Code: "NETWORK_ERROR"}
	shared := newWatched(File{Path: "Code_Review.json", Data: tmpl("Code_Review", "shared review")})
	c, err := NewComposite([]Member{{"team", team}, {"ops", ops}, {"shared", shared}}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := c.Load(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		templates []string
		flows     []string
		invalid   []string
		conflicts []Conflict
		location  string
		// bare is what Lookup("Code_Review") finds, "" for nothing.
		bare, bareFlow string
		stale          string // the reason, "" for fresh
	}
	tests := []struct {
		name string
		keep []string
		want want
	}{
		{"all", []string{"team", "ops", "shared"}, want{
			templates: []string{"ops/Code_Review", "ops/Runbook", "ops/outline", "shared/Code_Review", "team/Code_Review", "team/Only_Team", "team/outline"},
			flows:     []string{"ops/post", "team/post"}, invalid: []string{"team/Broken.json"},
			conflicts: []Conflict{{Name: "Code_Review", Namespaces: []string{"team", "ops", "shared"}},
				{Name: "outline", Namespaces: []string{"team", "ops"}}, {Name: "post", Namespaces: []string{"team", "ops"}, Flow: true}},
			location: "team, ops, shared", bare: "team/Code_Review", bareFlow: "team/post", stale: "source ops: GitHub is down"}},
		{"one", []string{"team"}, want{
			templates: []string{"team/Code_Review", "team/Only_Team", "team/outline"}, flows: []string{"team/post"},
			invalid: []string{"team/Broken.json"}, conflicts: []Conflict{}, location: "team", bare: "team/Code_Review", bareFlow: "team/post"}},
		// Without the first source, the bare name goes to the next one
		// kept, and the conflicts are those among the kept alone.
		{"first left out", []string{"shared", "ops"}, want{
			templates: []string{"ops/Code_Review", "ops/Runbook", "ops/outline", "shared/Code_Review"}, flows: []string{"ops/post"},
			invalid: []string{}, conflicts: []Conflict{{Name: "Code_Review", Namespaces: []string{"ops", "shared"}}},
			location: "ops, shared", bare: "ops/Code_Review", bareFlow: "ops/post", stale: "source ops: GitHub is down"}},
		{"last alone", []string{"shared"}, want{
			templates: []string{"shared/Code_Review"}, invalid: []string{}, conflicts: []Conflict{}, location: "shared", bare: "shared/Code_Review"}},
		{"none", nil, want{templates: []string{}, invalid: []string{}, conflicts: []Conflict{}}},
		{"unknown namespace", []string{"nobody"}, want{templates: []string{}, invalid: []string{}, conflicts: []Conflict{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cat.Only(tt.keep)
			var flows []string
			for _, fe := range got.Flows() {
				flows = append(flows, fe.Flow.Name)
			}
			var invalid []string
			for _, inv := range got.Invalid() {
				invalid = append(invalid, inv.Path)
			}
			g := want{templates: names(got.Templates()), flows: flows, invalid: append([]string{}, invalid...),
				conflicts: got.Conflicts(), location: got.Info().Location}
			if e, ok := got.Lookup("Code_Review"); ok {
				g.bare = e.Template.Metadata.Name
			}
			if fe, ok := got.LookupFlow("post"); ok {
				g.bareFlow = fe.Flow.Name
			}
			if s := got.Stale(); s != nil {
				g.stale = s.Reason
			}
			if diff := cmp.Diff(tt.want, g, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("Only(%v) (-want +got):\n%s", tt.keep, diff)
			}
			// A name of a source left out is not found, namespaced or bare.
			for _, e := range cat.Templates() {
				n := e.Template.Metadata.Name
				_, found := got.Lookup(n)
				if want := slices.Contains(tt.want.templates, n); found != want {
					t.Errorf("Lookup(%s) found = %v, want %v", n, found, want)
				}
			}
			for _, s := range got.Suggest("Runbok", 3) {
				if !slices.Contains(tt.want.templates, s) {
					t.Errorf("Suggest names %s, which is left out", s)
				}
			}
		})
	}
	if n := cat.Len(); n != 7 {
		t.Errorf("the catalog has %d templates after Only, want its 7", n)
	}
}

func TestCatalogOnlySingleSource(t *testing.T) {
	cat := Build([]File{{Path: "A.json", Data: tmpl("A", "a")}}, BuildOptions{Info: SourceInfo{Kind: "directory", Location: "/srv/prompts"}})
	got := cat.Only([]string{"default"})
	if got.Len() != 0 || got.Info().Location != "" || got.Info().Kind != "" {
		t.Errorf("Only of a single source's catalog = %d templates, info %+v; want nothing", got.Len(), got.Info())
	}
}

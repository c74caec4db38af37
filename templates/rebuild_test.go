package templates

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRebuild: a rebuild from an earlier catalog returns what Build
// returns for the same files, and shares the earlier catalog's entry for
// each file whose path and bytes it had, under the same size limit.
func TestRebuild(t *testing.T) {
	before := []File{
		{Path: "t/a.json", Data: tmpl("a", "alpha")},
		{Path: "t/b.json", Data: tmpl("b", "beta")},
		{Path: "t/c.json", Data: tmpl("c", "gamma")},
		{Path: "t/broken.json", Data: []byte(`{"metadata":`)},
	}
	tests := []struct {
		name  string
		files []File
		// prevMax and max are the size limits of the two builds.
		prevMax, max int
		shared       []string // templates whose entry is prev's
	}{
		{name: "nothing changed", files: before, shared: []string{"a", "b", "c"}},
		{name: "the default limit given", files: before, max: DefaultMaxFileSize, shared: []string{"a", "b", "c"}},
		{name: "one file changed", files: []File{before[0], {Path: "t/b.json", Data: tmpl("b", "beta, edited")}, before[2], before[3]},
			shared: []string{"a", "c"}},
		{name: "same bytes, another path", files: []File{before[0], {Path: "t/moved/b.json", Data: before[1].Data}, before[2]},
			shared: []string{"a", "c"}},
		{name: "the broken file fixed", files: []File{before[0], before[1], before[2], {Path: "t/broken.json", Data: tmpl("d", "delta")}},
			shared: []string{"a", "b", "c"}},
		{name: "a file gone, one added", files: []File{before[0], before[2], {Path: "t/e.json", Data: tmpl("e", "epsilon")}},
			shared: []string{"a", "c"}},
		// An earlier path now declares c: the old c.json is a duplicate, as
		// in Build, though its entry could be shared.
		{name: "a name taken by an earlier path", files: []File{{Path: "t/0.json", Data: tmpl("c", "another c")}, before[0], before[2]},
			shared: []string{"a"}},
		{name: "another size limit", files: before, prevMax: 4096, max: 8192},
		{name: "from nothing", files: before},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var prev *Catalog
			if tt.name != "from nothing" {
				prev = Build(before, BuildOptions{MaxFileSize: tt.prevMax, Now: fixedNow})
			}
			opts := BuildOptions{MaxFileSize: tt.max, Now: fixedNow}
			got := Rebuild(prev, tt.files, opts)
			want := Build(tt.files, opts)
			if diff := cmp.Diff(summary(want), summary(got)); diff != "" {
				t.Errorf("Rebuild differs from Build (-want +got):\n%s", diff)
			}
			shared := []string{}
			for _, e := range got.Templates() {
				if p, ok := prev.Lookup(e.Template.Metadata.Name); ok && p == e {
					shared = append(shared, e.Template.Metadata.Name)
				}
			}
			if diff := cmp.Diff(append([]string{}, tt.shared...), shared); diff != "" {
				t.Errorf("entries shared with the earlier catalog (-want +got):\n%s", diff)
			}
		})
	}
}

// catalogSummary is what a catalog serves and reports, pointers aside.
type catalogSummary struct {
	Templates []entrySummary
	Invalid   []string
}

type entrySummary struct {
	Name, Path, Digest, Raw, Text string
	Warnings                      []Warning
}

func summary(c *Catalog) catalogSummary {
	s := catalogSummary{Invalid: []string{}}
	for _, e := range c.Templates() {
		var text string
		for _, r := range e.Template.Results {
			text += r.Content + "\n"
		}
		s.Templates = append(s.Templates, entrySummary{e.Template.Metadata.Name, e.Path, e.Digest, string(e.Raw), text, e.Warnings})
	}
	for _, inv := range c.Invalid() {
		s.Invalid = append(s.Invalid, inv.Path+": "+inv.Err.Error())
	}
	return s
}

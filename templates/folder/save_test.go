package folder

import (
	"bytes"
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/templates"
)

func TestSaveTemplate(t *testing.T) {
	// A template the folder has is replaced in its own file; only a new
	// name becomes NAME.json at the top of the folder.
	tests := []struct {
		name      string
		files     map[string][]byte // relative path → content, before the load
		afterLoad map[string][]byte // written between the load and the save
		save      string
		wantFile  string // relative path written
	}{
		{name: "update at the top", files: map[string][]byte{"Hello.json": tmpl("Hello", "v1")},
			save: "Hello", wantFile: "Hello.json"},
		{name: "update in a subfolder", files: map[string][]byte{"team/Sub.json": tmpl("Team_Sub", "v1"), "Other.json": tmpl("Other", "o")},
			save: "Team_Sub", wantFile: "team/Sub.json"},
		{name: "update under another file name", files: map[string][]byte{"odd name.json": tmpl("Renamed", "v1")},
			save: "Renamed", wantFile: "odd name.json"},
		{name: "new name", files: map[string][]byte{"team/Sub.json": tmpl("Team_Sub", "v1")},
			save: "Brand_New", wantFile: "Brand_New.json"},
		{name: "a file added since the load", afterLoad: map[string][]byte{"team/Late.json": tmpl("Late", "v1")},
			save: "Late", wantFile: "team/Late.json"},
		// An editor is half-way through saving the file: it is invalid on
		// disk, but its last valid version is what the catalog serves.
		{name: "the served file of a template being edited", files: map[string][]byte{"team/Sub.json": tmpl("Team_Sub", "v1")},
			afterLoad: map[string][]byte{"team/Sub.json": []byte(`{"metadata":`)}, save: "Team_Sub", wantFile: "team/Sub.json"},
		// NAME.json exists but holds no valid template: it is replaced.
		{name: "a new name over an invalid file", files: map[string][]byte{"Brand_New.json": []byte(`{"metadata":`)},
			save: "Brand_New", wantFile: "Brand_New.json"},
		// Two files declare the name; the one a load serves is the first
		// valid one by path, whatever the files before it declare.
		{name: "the valid one of two files declaring the name", files: map[string][]byte{
			"a/Dup.json": []byte(`{"metadata":{"name":"Dup"}}`), "b/Dup.json": tmpl("Dup", "v1")},
			save: "Dup", wantFile: "b/Dup.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, src := loadedFolder(t, tt.files, tt.afterLoad)
			ctx := context.Background()

			saved := tmpl(tt.save, "saved version")
			got, err := src.SaveTemplate(ctx, tt.save, saved, "unused")
			if err != nil {
				t.Fatal(err)
			}
			// The file as the library names it, never the folder's path.
			if got.Location != tt.wantFile || got.Proposal != nil {
				t.Errorf("saved to %+v, want %s and no proposal", got, tt.wantFile)
			}
			want := filepath.Join(dir, filepath.FromSlash(tt.wantFile))
			if data, err := os.ReadFile(want); err != nil || string(data) != string(saved) {
				t.Errorf("%s holds %q, %v; want the saved version", tt.wantFile, data, err)
			}

			// No second file for the name, no temporary file left behind.
			var all []string
			filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					rel, _ := filepath.Rel(dir, p)
					all = append(all, filepath.ToSlash(rel))
				}
				return nil
			})
			wantAll := []string{tt.wantFile}
			for _, files := range []map[string][]byte{tt.files, tt.afterLoad} {
				for p := range files {
					if !slices.Contains(wantAll, p) {
						wantAll = append(wantAll, p)
					}
				}
			}
			slices.Sort(all)
			slices.Sort(wantAll)
			if !slices.Equal(all, wantAll) {
				t.Errorf("files after the save %v, want %v", all, wantAll)
			}
			cat, err := src.Load(ctx)
			if err != nil {
				t.Fatal(err)
			}
			e, ok := cat.Lookup(tt.save)
			if !ok || e.Path != tt.wantFile || string(e.Raw) != string(saved) {
				t.Errorf("catalog after the save: found=%v, want the saved version at %s", ok, tt.wantFile)
			}
			for _, inv := range cat.Invalid() {
				if strings.Contains(inv.Err.Error(), "duplicate") {
					t.Errorf("the save left a duplicate: %s: %v", inv.Path, inv.Err)
				}
			}
		})
	}
}

func TestSaveKeepsOtherTemplates(t *testing.T) {
	// A new name is written to NAME.json, but never over a file that holds
	// another template: that would delete it without a word.
	tests := []struct {
		name      string
		files     map[string][]byte
		afterLoad map[string][]byte
		save      string
	}{
		{name: "the file holds another valid template",
			files: map[string][]byte{"Foo.json": tmpl("Bar", "bar v1")}, save: "Foo"},
		{name: "the file was given another template since the load",
			afterLoad: map[string][]byte{"Foo.json": tmpl("Bar", "bar v1")}, save: "Foo"},
		// Bar's file is half-way through an edit: invalid on disk, but its
		// last valid version is what the catalog serves.
		{name: "the file serves another template being edited",
			files: map[string][]byte{"Foo.json": tmpl("Bar", "bar v1")}, afterLoad: map[string][]byte{"Foo.json": []byte(`{"metadata":`)}, save: "Foo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, src := loadedFolder(t, tt.files, tt.afterLoad)
			ctx := context.Background()
			before := readDir(t, dir)

			_, err := src.SaveTemplate(ctx, tt.save, tmpl(tt.save, "saved version"), "unused")
			f := fault.As(err)
			if f == nil || f.Code != fault.WriteConflict || !strings.Contains(f.Why, `"Bar"`) || f.How == "" {
				t.Fatalf("SaveTemplate error = %v, want WRITE_CONFLICT naming template Bar, with a fix", err)
			}
			if after := readDir(t, dir); !maps.EqualFunc(before, after, bytes.Equal) {
				t.Errorf("a refused save changed the folder: before %v, after %v", slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
			}
		})
	}
}

// readDir maps every file under dir (slash path relative to it) to its
// content.
func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// loadedFolder writes files into a new folder, loads it, then writes
// afterLoad over it: what a save finds on disk and what it loaded can
// differ, as when another program edits the folder.
func loadedFolder(t *testing.T, files, afterLoad map[string][]byte) (string, *Source) {
	t.Helper()
	dir := t.TempDir()
	for p, data := range files {
		writeFile(t, filepath.Join(dir, filepath.FromSlash(p)), data)
	}
	src := New(dir, templates.BuildOptions{Logger: quiet})
	if _, err := src.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	for p, data := range afterLoad {
		writeFile(t, filepath.Join(dir, filepath.FromSlash(p)), data)
	}
	return dir, src
}

// TestSaveKeepsOtherFormats: a save writes our JSON, so it never replaces
// a template the team keeps in another format.
func TestSaveKeepsOtherFormats(t *testing.T) {
	files := map[string][]byte{"summarize.prompt.yml": []byte("name: Summary\nmessages:\n  - role: user\n    content: Summarize {{input}}\n")}
	dir, src := loadedFolder(t, files, nil)
	before := readDir(t, dir)
	_, err := src.SaveTemplate(context.Background(), "summarize", tmpl("summarize", "saved version"), "unused")
	f := fault.As(err)
	if f == nil || f.Code != fault.WriteConflict || !strings.Contains(f.Why, "summarize.prompt.yml holds it as a GitHub Models .prompt.yml file") || f.How == "" {
		t.Fatalf("SaveTemplate error = %v, want WRITE_CONFLICT naming the file and its format", err)
	}
	if after := readDir(t, dir); !maps.EqualFunc(before, after, bytes.Equal) {
		t.Errorf("a refused save changed the folder: before %v, after %v", slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
	}
}

package golden

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// recorder is a testing.TB that records failures instead of failing, so
// that the tests can check that a mismatch is reported.
type recorder struct {
	testing.TB
	errors []string
	fatal  bool
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatal(args ...any) {
	r.errors = append(r.errors, fmt.Sprint(args...))
	r.fatal = true
	runtime.Goexit()
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Fatal(fmt.Sprintf(format, args...))
}

// run calls f with a recorder on its own goroutine, where Fatal may end it.
func run(t *testing.T, f func(testing.TB)) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r
}

func setUpdate(t *testing.T, v bool) {
	old := *update
	*update = v
	t.Cleanup(func() { *update = old })
}

func TestJSON(t *testing.T) {
	tests := []struct {
		name    string
		file    string // "" for no file
		got     any
		wantErr string // "" when it must pass
	}{
		{"same value, other layout and key order", "{\"b\": [1, 2],\n\"a\": \"x\"}", map[string]any{"a": "x", "b": []int{1, 2}}, ""},
		{"a json.RawMessage is compared as JSON", "{\n  \"a\": 1\n}\n", json.RawMessage(`{"a":1}`), ""},
		{"different value", `{"a":1}`, map[string]int{"a": 2}, "mismatch"},
		{"missing file", "", map[string]int{"a": 1}, "run go test -update"},
		{"golden file not JSON", `{`, map[string]int{"a": 1}, "is not JSON"},
		{"unmarshallable value", `{}`, func() {}, "marshal"},
	}
	setUpdate(t, false)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.golden.json")
			if tc.file != "" {
				if err := os.WriteFile(path, []byte(tc.file), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r := run(t, func(tb testing.TB) { JSON(tb, path, tc.got) })
			checkErrors(t, r, tc.wantErr)
		})
	}
}

func TestText(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		got     string
		wantErr string
	}{
		{"identical", "# A\n\nb\n", "# A\n\nb\n", ""},
		{"a trailing newline counts", "# A\n", "# A", "mismatch"},
		{"missing file", "", "x", "run go test -update"},
	}
	setUpdate(t, false)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.md")
			if tc.file != "" {
				if err := os.WriteFile(path, []byte(tc.file), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r := run(t, func(tb testing.TB) { Text(tb, path, tc.got) })
			checkErrors(t, r, tc.wantErr)
		})
	}
}

func checkErrors(t *testing.T, r *recorder, wantErr string) {
	t.Helper()
	if wantErr == "" {
		if len(r.errors) != 0 {
			t.Fatalf("want a pass, got %q", r.errors)
		}
		return
	}
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], wantErr) {
		t.Fatalf("want one failure mentioning %q, got %q", wantErr, r.errors)
	}
}

// TestUpdateRewrites checks that -update writes what a later run without
// it accepts: indented JSON ending in a newline, and text as given.
func TestUpdateRewrites(t *testing.T) {
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "x.golden.json")
	textPath := filepath.Join(dir, "x.md")
	for _, p := range []string{jsonPath, textPath} {
		if err := os.WriteFile(p, []byte("stale"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]any{"name": "Code_Review", "tags": []string{"go"}}

	setUpdate(t, true)
	if !Update() {
		t.Fatal("Update() = false under -update")
	}
	if r := run(t, func(tb testing.TB) { JSON(tb, jsonPath, got) }); len(r.errors) != 0 {
		t.Fatalf("JSON under -update: %q", r.errors)
	}
	if r := run(t, func(tb testing.TB) { Text(tb, textPath, "# Title\n") }); len(r.errors) != 0 {
		t.Fatalf("Text under -update: %q", r.errors)
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"name\": \"Code_Review\",\n  \"tags\": [\n    \"go\"\n  ]\n}\n"
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Errorf("written JSON (-want +got):\n%s", diff)
	}

	*update = false
	for name, f := range map[string]func(testing.TB){
		"JSON": func(tb testing.TB) { JSON(tb, jsonPath, got) },
		"Text": func(tb testing.TB) { Text(tb, textPath, "# Title\n") },
	} {
		if r := run(t, f); len(r.errors) != 0 {
			t.Errorf("%s after the rewrite: %q", name, r.errors)
		}
	}
}

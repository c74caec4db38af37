// Package golden compares test output with golden files under testdata and
// rewrites them when the tests run with -update.
//
// The -update flag is registered here, once, so that every package whose
// tests import golden gets the same flag with the same meaning; such a
// package must not register its own.
package golden

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files instead of comparing with them")

// Update reports whether the tests run with -update, for a test that has
// more to do than one comparison (creating a folder, skipping a check of
// leftover files that a rewrite would not remove).
func Update() bool { return *update }

// JSON compares got, marshalled with encoding/json, with the JSON in the
// file at path as JSON values, so that the file's layout and key order do
// not matter; with -update it writes got, indented, to path instead.
func JSON(t testing.TB, path string, got any) {
	t.Helper()
	gotJSON, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatalf("marshal %s: %v", path, err)
	}
	if *update {
		write(t, path, append(gotJSON, '\n'))
		return
	}
	wantJSON := read(t, path)
	var gotV, wantV any
	if err := json.Unmarshal(gotJSON, &gotV); err != nil {
		t.Fatalf("unmarshal what was got for %s: %v", path, err)
	}
	if err := json.Unmarshal(wantJSON, &wantV); err != nil {
		t.Fatalf("golden file %s is not JSON: %v", path, err)
	}
	if diff := cmp.Diff(wantV, gotV); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

// Text compares got with the file at path byte for byte; with -update it
// writes got to path instead.
func Text(t testing.TB, path, got string) {
	t.Helper()
	if *update {
		write(t, path, []byte(got))
		return
	}
	want := read(t, path)
	if !bytes.Equal(want, []byte(got)) {
		t.Errorf("%s mismatch (-want +got):\n%s", path, cmp.Diff(string(want), got))
	}
}

func write(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	return b
}

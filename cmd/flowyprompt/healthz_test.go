//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBinaryHealthzListsInvalidFiles: /healthz names each file left out of
// the library with its error code, not only how many there are.
func TestBinaryHealthzListsInvalidFiles(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile(filepath.Join("..", "..", "templates", "examples", "Bug_Triage.json"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"Bug_Triage.json": string(good),
		"broken.json":     `{"metadata": `,
		"huge.json":       `{"metadata":{"name":"huge"},"template":"` + strings.Repeat("x", 200_000) + `"}`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := startHTTP(t, 0, "TEMPLATES_DIR="+dir)
	report := s.health(t)
	if report["templates"] != float64(1) || report["invalid"] != float64(2) {
		t.Errorf("templates %v, invalid %v; want 1 and 2", report["templates"], report["invalid"])
	}
	list, ok := report["invalid_files"].([]any)
	if !ok {
		t.Fatalf("/healthz has no invalid_files list: %v", report)
	}
	var got []map[string]any
	for _, item := range list {
		m, _ := item.(map[string]any)
		if msg, _ := m["message"].(string); msg == "" {
			t.Errorf("invalid file %v has no message", m["path"])
		}
		got = append(got, map[string]any{"path": m["path"], "code": m["code"]})
	}
	want := []map[string]any{
		{"path": "broken.json", "code": "INVALID_TEMPLATE"},
		{"path": "huge.json", "code": "TEMPLATE_TOO_LARGE"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("invalid_files (-want +got):\n%s", diff)
	}
}

package app_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/app"
	"github.com/flowyprompt/flowyprompt/internal/golden"
)

// TestToolsListGolden pins what tools/list advertises, the save tool
// included: every name, title, description, schema and annotation a model
// reads. Editing a tool's text means rewriting the golden file with
// -update and reviewing its diff.
func TestToolsListGolden(t *testing.T) {
	t.Parallel()
	c := saveEngine(t, t.TempDir(), app.Options{AllowWrite: true})
	m := c.Request(t, 1, "tools/list", nil)
	if m.Error != nil {
		t.Fatalf("tools/list: %s", m.Raw)
	}
	path := filepath.Join("testdata", "tools.golden.json")
	golden.JSON(t, path, m.Result)

	// JSON equality ignores the order of an object's members, but the
	// order of a schema's properties is the order a model reads them in
	// and a client lays out its form in: the bytes must match too, once
	// both sides are compact and HTML-escaped alike (the golden file is
	// written with HTML escaping, the wire has none).
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var wantCompact bytes.Buffer
	if err := json.Compact(&wantCompact, want); err != nil {
		t.Fatal(err)
	}
	wantBytes, gotBytes := htmlEscaped(wantCompact.Bytes()), htmlEscaped(m.Result)
	if !bytes.Equal(wantBytes, gotBytes) {
		i := 0
		for i < len(wantBytes) && i < len(gotBytes) && wantBytes[i] == gotBytes[i] {
			i++
		}
		from := max(0, i-80)
		t.Errorf("tools/list is JSON-equal to %s but its bytes differ from byte %d (members in another order, or a string escaped differently):\ngot  …%s\nwant …%s",
			path, i, gotBytes[from:min(len(gotBytes), i+80)], wantBytes[from:min(len(wantBytes), i+80)])
	}
}

func htmlEscaped(b []byte) []byte {
	var out bytes.Buffer
	json.HTMLEscape(&out, b)
	return out.Bytes()
}

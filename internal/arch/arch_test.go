package arch_test

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/flowyprompt/flowyprompt"

func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", module+"/"+pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

func TestImportRules(t *testing.T) {
	rules := []struct {
		pkg       string
		forbidden []string
	}{
		{"mcp", []string{module + "/transport", "github.com/r3labs/sse", "github.com/google/go-github", module + "/templates", module + "/internal/app"}},
		{"templates", []string{module + "/mcp", module + "/transport", module + "/internal/app"}},
		{"render", []string{module + "/mcp", module + "/transport"}},
		// Transports move messages: what a template is, they never know.
		{"transport/stdio", []string{module + "/templates", module + "/internal/app", module + "/render"}},
		{"transport/sse", []string{module + "/templates", module + "/internal/app", module + "/render"}},
		{"transport/streamable", []string{module + "/templates", module + "/internal/app", module + "/render"}},
		{"transport/httpserver", []string{module + "/templates", module + "/internal/app", module + "/render"}},
	}
	// render is pure: none of its own imports may do I/O (its dependencies,
	// such as the schema library behind templates, are not its business).
	out, err := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, module+"/render").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range strings.Fields(string(out)) {
		switch {
		case imp == "os", strings.HasPrefix(imp, "net"), strings.HasPrefix(imp, "os/"), imp == "io/fs", imp == "syscall":
			t.Errorf("render imports %s: rendering must do no I/O", imp)
		}
	}
	for _, r := range rules {
		for _, d := range deps(t, r.pkg) {
			for _, f := range r.forbidden {
				if d == f || strings.HasPrefix(d, f+"/") {
					t.Errorf("%s imports %s (forbidden: %s)", r.pkg, d, f)
				}
			}
		}
	}
}

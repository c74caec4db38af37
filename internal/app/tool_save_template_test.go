package app_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/app"
	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/flowyprompt/flowyprompt/templates/folder"
)

type conflictWriter struct{}

func (conflictWriter) SaveTemplate(context.Context, string, []byte, string) (templates.Saved, error) {
	return templates.Saved{}, &fault.Error{Code: fault.WriteConflict, What: "the file changed on GitHub", Why: "someone committed it meanwhile",
		How: "refresh, merge and save again"}
}

func saveEngine(t *testing.T, dir string, opts app.Options) *mcptest.Client {
	t.Helper()
	src := folder.New(dir, templates.BuildOptions{Logger: slog.New(slog.DiscardHandler)})
	lib := templates.NewLibrary(src, slog.New(slog.DiscardHandler))
	if err := lib.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	opts.Library = lib
	if opts.Writer == nil && opts.AllowWrite {
		opts.Writer = src
	}
	e := mcp.NewEngine(app.New(opts).Server(), mcp.EngineOptions{})
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	return c
}

func callText(t *testing.T, c *mcptest.Client, id int, name string, args any) (string, bool) {
	t.Helper()
	res := call(t, c, id, name, args)
	return res.Content[0].Text, res.IsError
}

const saveTemplate = `{"metadata":{"name":"team_hello","description":"Greets","version":"1.0.0"},"variables":[],"results":[{"name":"s","content":"Hello."}]}`

func TestSaveToolDisabledByDefault(t *testing.T) {
	t.Parallel()
	c := saveEngine(t, t.TempDir(), app.Options{})
	m := c.Request(t, 1, "tools/list", nil)
	if strings.Contains(string(m.Result), `"name":"flowyprompt_save_template"`) {
		t.Fatal("save tool listed without --allow-write")
	}
	text, isErr := callText(t, c, 2, "flowyprompt_save_template", map[string]string{"template": saveTemplate, "message": "m"})
	if !isErr || !strings.Contains(text, "WRITE_DISABLED") || !strings.Contains(text, "--allow-write") {
		t.Fatalf("got %s", text)
	}
}

func TestSaveTool(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := saveEngine(t, dir, app.Options{AllowWrite: true, WritePatterns: []string{"team_*"}})
	if m := c.Request(t, 1, "tools/list", nil); !strings.Contains(string(m.Result), `"name":"flowyprompt_save_template"`) {
		t.Fatal("save tool not listed with --allow-write")
	}
	tests := []struct {
		name     string
		args     map[string]string
		isErr    bool
		contains string
	}{
		{"created", map[string]string{"template": saveTemplate, "message": "add"}, false, "Created template team_hello"},
		{"updated", map[string]string{"template": strings.Replace(saveTemplate, "1.0.0", "1.1.0", 1), "message": "bump", "expected_version": "1.0.0"}, false, "Updated template team_hello v1.1.0"},
		{"name not allowed", map[string]string{"template": strings.Replace(saveTemplate, "team_hello", "other", 1), "message": "m"}, true, "team_*"},
		{"invalid template", map[string]string{"template": `{"metadata":{"name":"team_x"}}`, "message": "m"}, true, "/metadata/version"},
		{"missing message", map[string]string{"template": saveTemplate}, true, "message"},
		{"too large", map[string]string{"template": strings.Replace(saveTemplate, "Hello.", strings.Repeat("x", 110_000), 1), "message": "m"}, true, "102400"},
		{"too large in bytes", map[string]string{"template": strings.Replace(saveTemplate, "Hello.", strings.Repeat("회", 40_000), 1), "message": "m"}, true, "TEMPLATE_TOO_LARGE"},
	}
	for i, tt := range tests {
		text, isErr := callText(t, c, 10+i, "flowyprompt_save_template", tt.args)
		if isErr != tt.isErr || !strings.Contains(text, tt.contains) {
			t.Errorf("%s: isError=%v text=%s", tt.name, isErr, text)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "team_hello.json"))
	if err != nil || !strings.Contains(string(data), "1.1.0") {
		t.Fatalf("file not written: %v %s", err, data)
	}
	if _, err := os.Stat(filepath.Join(dir, "other.json")); !os.IsNotExist(err) {
		t.Fatal("refused template was written")
	}
}

func TestSaveToolConflict(t *testing.T) {
	t.Parallel()
	c := saveEngine(t, t.TempDir(), app.Options{AllowWrite: true, Writer: conflictWriter{}})
	text, isErr := callText(t, c, 1, "flowyprompt_save_template", map[string]string{"template": saveTemplate, "message": "m"})
	if !isErr || !strings.Contains(text, "WRITE_CONFLICT") || !strings.Contains(text, "merge and save again") {
		t.Fatalf("got %s", text)
	}
}

// callResult calls a tool and returns its whole result.
func callResult(t *testing.T, c *mcptest.Client, id int, name string, args any) (text string, structured map[string]any, isErr bool) {
	t.Helper()
	res := call(t, c, id, name, args)
	return res.Content[0].Text, res.StructuredContent, res.IsError
}

// TestSaveToolDefinition: the save tool may overwrite a template, so it is
// marked destructive, and its schema advertises the real size limit.
func TestSaveToolDefinition(t *testing.T) {
	t.Parallel()
	c := saveEngine(t, t.TempDir(), app.Options{AllowWrite: true})
	m := c.Request(t, 1, "tools/list", nil)
	var res struct {
		Tools []struct {
			Name        string
			InputSchema struct {
				Properties map[string]struct {
					MaxLength int `json:"maxLength"`
				} `json:"properties"`
			} `json:"inputSchema"`
			Annotations map[string]any `json:"annotations"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.Name != "flowyprompt_save_template" {
			continue
		}
		if tool.Annotations["destructiveHint"] != true {
			t.Errorf("destructiveHint = %v, want true", tool.Annotations["destructiveHint"])
		}
		if got := tool.InputSchema.Properties["template"].MaxLength; got != templates.DefaultMaxFileSize {
			t.Errorf("template maxLength = %d, want %d", got, templates.DefaultMaxFileSize)
		}
		if _, ok := tool.InputSchema.Properties["expected_version"]; !ok {
			t.Error("no expected_version argument")
		}
		return
	}
	t.Fatal("save tool not listed")
}

// TestSaveToolSafety: an update must name the version it replaces, a
// downgrade is refused, warnings come back as safety notices, and a
// refused name has its own code with an allowed example.
func TestSaveToolSafety(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := saveEngine(t, dir, app.Options{AllowWrite: true, WritePatterns: []string{"team_*"}})
	v := func(version string) string { return strings.Replace(saveTemplate, "1.0.0", version, 1) }
	tests := []struct {
		name     string
		args     map[string]string
		isErr    bool
		contains []string
		want     map[string]any // members of structuredContent
	}{
		{"create", map[string]string{"template": saveTemplate, "message": "add"}, false,
			[]string{"Created template team_hello v1.0.0"}, map[string]any{"created": true}},
		{"update without expected_version", map[string]string{"template": v("1.1.0"), "message": "bump"}, true,
			[]string{"WRITE_CONFLICT", "expected_version", "1.0.0"}, nil},
		{"update with a stale expected_version", map[string]string{"template": v("1.1.0"), "message": "bump", "expected_version": "0.9.0"}, true,
			[]string{"WRITE_CONFLICT", "0.9.0", "1.0.0"}, nil},
		{"expected_version for a new template", map[string]string{"template": strings.Replace(saveTemplate, "team_hello", "team_new", 1), "message": "m", "expected_version": "1.0.0"}, true,
			[]string{"WRITE_CONFLICT", "team_new", "does not exist"}, nil},
		{"downgrade", map[string]string{"template": v("0.0.1"), "message": "oops", "expected_version": "1.0.0"}, true,
			[]string{"INVALID_ARGUMENT", "0.0.1", "lower than", "1.0.0"}, nil},
		{"update", map[string]string{"template": v("1.1.0"), "message": "bump", "expected_version": "1.0.0"}, false,
			[]string{"Updated template team_hello v1.1.0", "replaced v1.0.0"}, map[string]any{"created": false, "replaced_version": "1.0.0", "version": "1.1.0"}},
		{"warnings are safety notices", map[string]string{"template": strings.Replace(v("1.2.0"), "Hello.", "Hello {{who}}.", 1), "message": "m", "expected_version": "1.1.0"}, false,
			[]string{"## Safety notices", "who"}, map[string]any{"replaced_version": "1.1.0"}},
		{"name not allowed", map[string]string{"template": strings.Replace(saveTemplate, "team_hello", "other", 1), "message": "m"}, true,
			[]string{"NAME_NOT_ALLOWED", "team_*", "team_other"}, nil},
	}
	for i, tt := range tests {
		text, sc, isErr := callResult(t, c, 10+i, "flowyprompt_save_template", tt.args)
		if isErr != tt.isErr {
			t.Errorf("%s: isError=%v: %s", tt.name, isErr, text)
			continue
		}
		for _, s := range tt.contains {
			if !strings.Contains(text, s) {
				t.Errorf("%s: no %q in:\n%s", tt.name, s, text)
			}
		}
		for k, want := range tt.want {
			if sc[k] != want {
				t.Errorf("%s: structuredContent[%s] = %v, want %v", tt.name, k, sc[k], want)
			}
		}
		if tt.name == "warnings are safety notices" {
			if n, _ := sc["notices"].([]any); len(n) == 0 {
				t.Errorf("%s: no notices in structuredContent: %v", tt.name, sc)
			}
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "team_hello.json"))
	if err != nil || !strings.Contains(string(data), "1.2.0") {
		t.Fatalf("file: %v %s", err, data)
	}
}

// TestSaveToolPrereleaseUpgrade: pre-release identifiers compare as
// numbers where they are numbers, so rc.10 replaces rc.9 (and not the
// other way round), as semantic versioning orders them.
func TestSaveToolPrereleaseUpgrade(t *testing.T) {
	t.Parallel()
	c := saveEngine(t, t.TempDir(), app.Options{AllowWrite: true})
	v := func(version string) string { return strings.Replace(saveTemplate, "1.0.0", version, 1) }
	steps := []struct {
		name, version, expected string
		isErr                   bool
		contains                string
	}{
		{"create rc.9", "1.0.0-rc.9", "", false, "Created template team_hello v1.0.0-rc.9"},
		{"rc.10 replaces rc.9", "1.0.0-rc.10", "1.0.0-rc.9", false, "Updated template team_hello v1.0.0-rc.10"},
		{"rc.9 does not replace rc.10", "1.0.0-rc.9", "1.0.0-rc.10", true, "lower than"},
		{"the release replaces its pre-release", "1.0.0", "1.0.0-rc.10", false, "Updated template team_hello v1.0.0"},
	}
	for i, s := range steps {
		args := map[string]string{"template": v(s.version), "message": s.name}
		if s.expected != "" {
			args["expected_version"] = s.expected
		}
		text, isErr := callText(t, c, 10+i, "flowyprompt_save_template", args)
		if isErr != s.isErr || !strings.Contains(text, s.contains) {
			t.Fatalf("%s: isError=%v, want %v, and %q in:\n%s", s.name, isErr, s.isErr, s.contains, text)
		}
	}
}

// TestSaveToolOwnLimit: an operator's MAX_FILE_SIZE replaces the
// default in the template argument's schema, its maxLength and its text.
func TestSaveToolOwnLimit(t *testing.T) {
	t.Parallel()
	c := saveEngine(t, t.TempDir(), app.Options{AllowWrite: true, MaxFileSize: 5000})
	var res struct {
		Tools []struct {
			Name        string
			InputSchema struct {
				Properties map[string]struct {
					MaxLength   int    `json:"maxLength"`
					Description string `json:"description"`
				} `json:"properties"`
			} `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(c.Request(t, 1, "tools/list", nil).Result, &res); err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.Name == "flowyprompt_save_template" {
			p := tool.InputSchema.Properties["template"]
			if p.MaxLength != 5000 || !strings.Contains(p.Description, "At most 5000 bytes") {
				t.Errorf("template: maxLength %d, %q; want 5000, and the text to say it", p.MaxLength, p.Description)
			}
			return
		}
	}
	t.Fatal("save tool not listed")
}

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestSaveToSeveralSources: with several --source libraries and
// --allow-write the save tool saves to the one its source argument
// names; when none of them can be written, the server says so at start
// and the tool is not offered.
func TestSaveToSeveralSources(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	const tmpl = `{"metadata":{"name":"Fresh","description":"d","version":"1.0.0"},"variables":[],"results":[{"name":"s","content":"Hi."}]}`
	args := `{"template":` + strconv.Quote(tmpl) + `,"message":"add","source":"b"}`
	tests := []struct {
		name          string
		sources       []string
		code          int
		stdout        []string
		stderr        []string
		writtenToB    bool
		warnsReadOnly bool
	}{
		{name: "two folders", sources: []string{"name=a,dir=" + a, "name=b,dir=" + b, "name=ex,examples"},
			stdout: []string{"Created template b/Fresh"}, writtenToB: true},
		{name: "none can be written", sources: []string{"name=ex,examples", "name=more,examples"}, code: 1,
			stdout: []string{"WRITE_DISABLED"}, warnsReadOnly: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cli := []string{"call", "flowyprompt_save_template", args, "--allow-write"}
			for _, s := range tt.sources {
				cli = append(cli, "--source", s)
			}
			stdout, stderr, code := runCLI(t, map[string]string{"LOG_LEVEL": "warn"}, "", cli...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, stdout, stderr)
			}
			checkOutput(t, stdout, stderr, tt.stdout, tt.stderr)
			if got := strings.Contains(stderr, "none of the --source libraries can be written"); got != tt.warnsReadOnly {
				t.Errorf("warns that no source can be written: %v, want %v\nstderr: %s", got, tt.warnsReadOnly, stderr)
			}
			data, err := os.ReadFile(filepath.Join(b, "Fresh.json"))
			if written := err == nil; written != tt.writtenToB || (written && string(data) != tmpl) {
				t.Errorf("b/Fresh.json written: %v (%q), want %v with the template as sent", written, data, tt.writtenToB)
			}
			os.Remove(filepath.Join(b, "Fresh.json"))
			if _, err := os.Stat(filepath.Join(a, "Fresh.json")); err == nil {
				t.Error("the save reached the source a")
			}
		})
	}
}

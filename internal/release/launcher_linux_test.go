package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestLinuxLauncher: the launcher hands its arguments to this CPU's
// binary (here a script standing in for it), as the host starts it.
func TestLinuxLauncher(t *testing.T) {
	arch := runtime.GOARCH
	dir := t.TempDir()
	for rel, body := range map[string]string{
		"linux/flowyprompt":              linuxLauncher,
		"linux-" + arch + "/flowyprompt": "#!/bin/sh\necho \"$(basename \"$(dirname \"$0\")\") $*\"\n",
	} {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(filepath.Join(dir, "linux", "flowyprompt"), "serve", "--log-level", "debug").CombinedOutput()
	if arch != "amd64" && arch != "arm64" {
		// A CPU the bundle has no binary for is named, not a cryptic exec error.
		if err == nil || !strings.Contains(string(out), "this bundle has no binary for") {
			t.Errorf("launcher on %s: %q, %v", arch, out, err)
		}
		return
	}
	if err != nil || string(out) != "linux-"+arch+" serve --log-level debug\n" {
		t.Errorf("launcher: %q, %v", out, err)
	}
}

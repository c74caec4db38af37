package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeInstall: `make install` builds with the version stamped from
// git and installs into PREFIX/bin; the README tells a newcomer about it
// under "Install" and keeps its two set-up commands at the top; the
// repository carries its licence.
func TestMakeInstall(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	root := filepath.Join("..", "..")
	prefix := t.TempDir()
	out, err := exec.Command("make", "-C", root, "-n", "install", "PREFIX="+prefix, "VERSION=v9.9.9-test").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n install: %v\n%s", err, out)
	}
	for _, want := range []string{"-X main.buildVersion=v9.9.9-test", "-o bin/flowyprompt", prefix + "/bin", "install -m 0755 bin/flowyprompt"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("make -n install does not run %q:\n%s", want, out)
		}
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	r := string(readme)
	top, install, ok := strings.Cut(r, "## Install")
	if !ok {
		t.Fatal("README has no Install section")
	}
	install, _, _ = strings.Cut(install, "\n## ")
	if !strings.Contains(install, "make install") {
		t.Error("README's Install section does not mention make install")
	}
	if !strings.Contains(top, "make run ") || !strings.Contains(top, "make test ") {
		t.Error("README's top lost its two set-up commands, make run and make test")
	}
	lic, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(lic), "MIT License") || !strings.Contains(string(lic), "The flowyprompt authors") {
		t.Errorf("LICENSE is not MIT by the flowyprompt authors:\n%.200s", lic)
	}
}

// TestMakeRelease: `make release` cross-builds static, path-free binaries
// stamped with the version and commit for the five platforms, packs the
// bundle with the pinned MCPB CLI after checking its manifest, and writes
// the archives and SHA256SUMS into dist/, which git ignores and
// `make clean` removes.
func TestMakeRelease(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	root := filepath.Join("..", "..")
	// -B: every step, as on a fresh clone, whatever this checkout has
	// installed or built already (npm ci runs only when its lock file
	// changed).
	out, err := exec.Command("make", "-C", root, "-n", "-B", "release", "VERSION=v9.9.9-test", "COMMIT=abcdef123456").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n release: %v\n%s", err, out)
	}
	for _, want := range []string{
		"npm ci",
		"for p in darwin/arm64 darwin/amd64 windows/amd64 linux/amd64 linux/arm64;",
		`CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags "-s -w -X main.buildVersion=v9.9.9-test -X main.buildCommit=abcdef123456"`,
		`go build -tags desktop -trimpath`,
		"internal/e2e/node_modules/.bin/mcpb validate bin/bundle/stage/manifest.json",
		"internal/e2e/node_modules/.bin/mcpb pack bin/bundle/stage dist/flowyprompt.mcpb",
		"-sum flowyprompt.mcpb -out dist README.md LICENSE",
		"-bundle dist/flowyprompt.mcpb -out dist/server.json",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("make -n release does not run %q:\n%s", want, out)
		}
	}
	out, err = exec.Command("make", "-C", root, "-n", "clean").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "rm -rf bin dist") {
		t.Errorf("make -n clean does not remove dist (%v):\n%s", err, out)
	}
	ignore, err := os.ReadFile(filepath.Join(root, ".gitignore"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains("\n"+string(ignore), "\n/dist/\n") {
		t.Error(".gitignore does not ignore /dist/")
	}
}

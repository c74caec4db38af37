package main

import (
	"bytes"
	"debug/macho"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeBins lays out bins/<os>-<arch>/flowyprompt[.exe] as make builds
// them: thin Mach-O files for macOS (universal reads their CPU), a
// marker for the others.
func fakeBins(t *testing.T, platforms []string) string {
	t.Helper()
	bins := t.TempDir()
	for _, p := range platforms {
		goos, arch, _ := strings.Cut(p, "/")
		name := "flowyprompt"
		if goos == "windows" {
			name += ".exe"
		}
		data := []byte("binary for " + p)
		if goos == "darwin" {
			cpu := map[string]macho.Cpu{"amd64": macho.CpuAmd64, "arm64": macho.CpuArm64}[arch]
			data = thinMachO(cpu, 0, "binary for "+p)
		}
		dir := filepath.Join(bins, goos+"-"+arch)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bins
}

var allPlatforms = []string{"darwin/arm64", "darwin/amd64", "windows/amd64", "linux/amd64", "linux/arm64"}

// TestStageBundle: every platform's binary lands where the manifest's
// command for its system points, executable; macOS gets one universal
// binary; the manifest carries the semver version, the icon is a 512×512
// PNG.
func TestStageBundle(t *testing.T) {
	bins := fakeBins(t, allPlatforms)
	out := filepath.Join(t.TempDir(), "stage")
	if err := stageBundle(out, bins, "v0.3.0-5-gabc1234", allPlatforms, filepath.Join("..", "..", "LICENSE")); err != nil {
		t.Fatal(err)
	}
	var m struct {
		Version string `json:"version"`
		Server  struct {
			MCPConfig struct {
				Command           string                              `json:"command"`
				PlatformOverrides map[string]struct{ Command string } `json:"platform_overrides"`
			} `json:"mcp_config"`
		} `json:"server"`
	}
	raw, err := os.ReadFile(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if m.Version != "0.3.1-dev.5+gabc1234" {
		t.Errorf("manifest version %q", m.Version)
	}
	cmds := map[string]string{
		"linux":  m.Server.MCPConfig.Command,
		"darwin": m.Server.MCPConfig.PlatformOverrides["darwin"].Command,
		"win32":  m.Server.MCPConfig.PlatformOverrides["win32"].Command,
	}
	want := map[string]string{
		"linux":  "${__dirname}/server/linux/flowyprompt",
		"darwin": "${__dirname}/server/darwin/flowyprompt",
		"win32":  "${__dirname}/server/windows-amd64/flowyprompt.exe",
	}
	for k, v := range want {
		if cmds[k] != v {
			t.Errorf("command for %s is %q, want %q", k, cmds[k], v)
		}
	}
	files := map[string]string{}
	err = filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(out, p)
		files[filepath.ToSlash(rel)] = fi.Mode().Perm().String()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wantFiles := map[string]string{
		"manifest.json":                        "-rw-r--r--",
		"icon.png":                             "-rw-r--r--",
		"LICENSE":                              "-rw-r--r--",
		"server/darwin/flowyprompt":            "-rwxr-xr-x",
		"server/windows-amd64/flowyprompt.exe": "-rwxr-xr-x",
		"server/linux/flowyprompt":             "-rwxr-xr-x",
		"server/linux-amd64/flowyprompt":       "-rwxr-xr-x",
		"server/linux-arm64/flowyprompt":       "-rwxr-xr-x",
	}
	if len(files) != len(wantFiles) {
		t.Errorf("bundle holds %v, want %v", files, wantFiles)
	}
	for f, mode := range wantFiles {
		if files[f] != mode {
			t.Errorf("%s: mode %q, want %q", f, files[f], mode)
		}
	}
	ff, err := macho.OpenFat(filepath.Join(out, "server", "darwin", "flowyprompt"))
	if err != nil {
		t.Fatalf("the macOS command is not a universal binary: %v", err)
	}
	if len(ff.Arches) != 2 || ff.Arches[0].Cpu != macho.CpuArm64 || ff.Arches[1].Cpu != macho.CpuAmd64 {
		t.Errorf("universal binary slices %+v", ff.Arches)
	}
	ff.Close()
	f, err := os.Open(filepath.Join(out, "icon.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil || cfg.Width != 512 || cfg.Height != 512 {
		t.Errorf("icon: %dx%d, %v", cfg.Width, cfg.Height, err)
	}
	again, err := icon()
	if err != nil {
		t.Fatal(err)
	}
	if first, _ := os.ReadFile(filepath.Join(out, "icon.png")); !bytes.Equal(first, again) {
		t.Error("the icon differs from one build to the next")
	}
}

// TestStageBundleRefuses: a platform the manifest has no command for, or
// a missing binary, stops the build.
func TestStageBundleRefuses(t *testing.T) {
	lic := filepath.Join("..", "..", "LICENSE")
	bins := fakeBins(t, []string{"linux/amd64", "freebsd/amd64"})
	for _, plats := range [][]string{{"freebsd/amd64"}, {"linux/arm64"}, {"linux"}} {
		if err := stageBundle(filepath.Join(t.TempDir(), "s"), bins, "v1.0.0", plats, lic); err == nil {
			t.Errorf("%v: no error", plats)
		}
	}
	if err := stageBundle(filepath.Join(t.TempDir(), "s"), bins, "nightly", []string{"linux/amd64"}, lic); err == nil {
		t.Error("a version that is not semver-able was accepted")
	}
}

package main

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/template"
)

// manifestTemplate is manifest.json but for its version. Its
// manifest_version, 0.3, is the newest the MCPB package publishes a JSON
// schema for (mcpb-manifest-latest.schema.json): 0.4 only adds the "uv"
// server type and is marked experimental, and a host whose copy of the
// MCPB library predates a manifest version refuses the bundle outright.
//
//go:embed manifest.json.tmpl
var manifestTemplate string

// linuxLauncher picks the CPU's binary on Linux: a manifest's
// platform_overrides are keyed by operating system only ("linux"), and
// Linux has no universal executable format, so the command it names is
// this script. /bin/sh and uname are on every Linux system.
const linuxLauncher = `#!/bin/sh
dir=$(dirname "$0")
case $(uname -m) in
x86_64 | amd64) arch=amd64 ;;
aarch64 | arm64) arch=arm64 ;;
*)
	echo "flowyprompt: this bundle has no binary for $(uname -m)" >&2
	exit 1
	;;
esac
exec "$dir/../linux-$arch/flowyprompt" "$@"
`

// manifestJSON renders the manifest for a version as git describes it.
func manifestJSON(describe string) ([]byte, error) {
	v, err := semver(describe)
	if err != nil {
		return nil, err
	}
	tmpl, err := template.New("manifest").Funcs(template.FuncMap{
		"json": func(s string) (string, error) { b, err := json.Marshal(s); return string(b), err },
	}).Option("missingkey=error").Parse(manifestTemplate)
	if err != nil {
		return nil, fmt.Errorf("manifest template: %w", err)
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, map[string]string{"Version": v}); err != nil {
		return nil, fmt.Errorf("manifest template: %w", err)
	}
	var m any
	if err := json.Unmarshal(b.Bytes(), &m); err != nil {
		return nil, fmt.Errorf("manifest template is not JSON: %w", err)
	}
	return b.Bytes(), nil
}

// manifest is the part of manifest.json that stageBundle checks against
// the files it lays out.
type manifest struct {
	Icon   string `json:"icon"`
	Server struct {
		EntryPoint string `json:"entry_point"`
		MCPConfig  struct {
			Command           string                              `json:"command"`
			PlatformOverrides map[string]struct{ Command string } `json:"platform_overrides"`
		} `json:"mcp_config"`
	} `json:"server"`
}

// commandFor is the file the host starts on goos, relative to the bundle.
func (m *manifest) commandFor(goos string) string {
	// The overrides are keyed by Node's process.platform, the host's view.
	key := goos
	if goos == "windows" {
		key = "win32"
	}
	cmd := m.Server.MCPConfig.Command
	if o, ok := m.Server.MCPConfig.PlatformOverrides[key]; ok && o.Command != "" {
		cmd = o.Command
	}
	return strings.TrimPrefix(cmd, "${__dirname}/")
}

// stageBundle lays out the bundle's folder for mcpb pack: the manifest,
// the icon, the licence and, for each of platforms ("linux/amd64"...),
// the binary built into bins/<os>-<arch>/, where the manifest's command
// for that operating system expects it.
func stageBundle(out, bins, describe string, platforms []string, license string) error {
	mj, err := manifestJSON(describe)
	if err != nil {
		return err
	}
	var m manifest
	if err := json.Unmarshal(mj, &m); err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	if err := os.RemoveAll(out); err != nil {
		return fmt.Errorf("stage: %w", err)
	}
	write := func(rel string, data []byte, mode os.FileMode) error {
		p := filepath.Join(out, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("stage: %w", err)
		}
		if err := os.WriteFile(p, data, mode); err != nil {
			return fmt.Errorf("stage: %w", err)
		}
		// WriteFile's mode is cut by the umask; pack copies what it finds.
		if err := os.Chmod(p, mode); err != nil {
			return fmt.Errorf("stage: %w", err)
		}
		return nil
	}
	png, err := icon()
	if err != nil {
		return err
	}
	lic, err := os.ReadFile(license)
	if err != nil {
		return fmt.Errorf("stage: %w", err)
	}
	if err := errors.Join(write("manifest.json", mj, 0o644), write(m.Icon, png, 0o644), write("LICENSE", lic, 0o644)); err != nil {
		return err
	}
	var darwin []string
	oses := map[string]bool{}
	for _, p := range platforms {
		goos, arch, ok := strings.Cut(p, "/")
		if !ok {
			return fmt.Errorf("stage: platform %q is not os/arch", p)
		}
		oses[goos] = true
		bin := filepath.Join(bins, goos+"-"+arch, "flowyprompt")
		switch {
		case goos == "darwin":
			darwin = append(darwin, bin)
			continue
		case goos == "windows" && arch == "amd64":
			bin += ".exe"
		case goos == "linux" && (arch == "amd64" || arch == "arm64"):
		default:
			return fmt.Errorf("stage: the manifest has no command for %s", p)
		}
		data, err := os.ReadFile(bin)
		if err != nil {
			return fmt.Errorf("stage: %w", err)
		}
		rel := "server/" + goos + "-" + arch + "/" + filepath.Base(bin)
		if goos == "windows" {
			rel = m.commandFor(goos)
		}
		if err := write(rel, data, 0o755); err != nil {
			return err
		}
		if goos == "linux" {
			if err := write(m.commandFor("linux"), []byte(linuxLauncher), 0o755); err != nil {
				return err
			}
		}
	}
	if len(darwin) > 0 {
		p := filepath.Join(out, filepath.FromSlash(m.commandFor("darwin")))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("stage: %w", err)
		}
		if err := universal(p, darwin...); err != nil {
			return err
		}
	}
	// The manifest and the layout must agree: every included system's
	// command is a file in the bundle.
	for goos := range oses {
		rel := m.commandFor(goos)
		if fi, err := os.Stat(filepath.Join(out, filepath.FromSlash(rel))); err != nil || fi.Mode().Perm()&0o111 == 0 {
			return fmt.Errorf("stage: the manifest's command for %s, %s, is not an executable in the bundle (%v)", goos, rel, err)
		}
	}
	return nil
}

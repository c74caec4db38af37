package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestArchives: one archive per platform, each a folder with the binary
// (executable) and the extra files, dated mtime; the same inputs give the
// same bytes; SHA256SUMS lists every archive and the bundle, as
// sha256sum -c expects.
func TestArchives(t *testing.T) {
	bins := fakeBins(t, allPlatforms)
	src := t.TempDir()
	readme, license := filepath.Join(src, "README.md"), filepath.Join(src, "LICENSE")
	for _, f := range []string{readme, license} {
		if err := os.WriteFile(f, []byte("text of "+filepath.Base(f)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out := t.TempDir()
	if err := os.WriteFile(filepath.Join(out, "flowyprompt.mcpb"), []byte("bundle"), 0o644); err != nil {
		t.Fatal(err)
	}
	mtime := time.Unix(1_790_000_000, 0).UTC()
	if err := run([]string{"archive", "-version", "v0.3.0", "-bins", bins, "-platforms", strings.Join(allPlatforms, " "),
		"-mtime", "1790000000", "-sum", "flowyprompt.mcpb", "-out", out, readme, license}); err != nil {
		t.Fatal(err)
	}
	var wantSums strings.Builder
	for _, name := range []string{"flowyprompt.mcpb", "flowyprompt_v0.3.0_darwin_amd64.tar.gz", "flowyprompt_v0.3.0_darwin_arm64.tar.gz",
		"flowyprompt_v0.3.0_linux_amd64.tar.gz", "flowyprompt_v0.3.0_linux_arm64.tar.gz", "flowyprompt_v0.3.0_windows_amd64.zip"} {
		data, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		fmt.Fprintf(&wantSums, "%s  %s\n", hex.EncodeToString(sum[:]), name)
	}
	if got, err := os.ReadFile(filepath.Join(out, "SHA256SUMS")); err != nil || string(got) != wantSums.String() {
		t.Errorf("SHA256SUMS:\n%s\nwant:\n%s", got, wantSums.String())
	}

	entries := func(name string) map[string]string {
		t.Helper()
		got := map[string]string{}
		data, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".zip") {
			zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range zr.File {
				rc, err := f.Open()
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(rc)
				rc.Close()
				if !f.Modified.Equal(mtime) {
					t.Errorf("%s: %s dated %v", name, f.Name, f.Modified)
				}
				got[f.Name] = f.Mode().Perm().String() + " " + string(body)
			}
			return got
		}
		gz, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(gz)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(tr)
			if !h.ModTime.Equal(mtime) || h.Uid != 0 || h.Uname != "root" {
				t.Errorf("%s: %s dated %v, owner %d/%s", name, h.Name, h.ModTime, h.Uid, h.Uname)
			}
			got[h.Name] = os.FileMode(h.Mode).Perm().String() + " " + string(body)
		}
		return got
	}
	linux := entries("flowyprompt_v0.3.0_linux_arm64.tar.gz")
	wantLinux := map[string]string{
		"flowyprompt_v0.3.0_linux_arm64/flowyprompt": "-rwxr-xr-x binary for linux/arm64",
		"flowyprompt_v0.3.0_linux_arm64/README.md":   "-rw-r--r-- text of README.md",
		"flowyprompt_v0.3.0_linux_arm64/LICENSE":     "-rw-r--r-- text of LICENSE",
	}
	if fmt.Sprint(linux) != fmt.Sprint(wantLinux) {
		t.Errorf("linux archive %v, want %v", linux, wantLinux)
	}
	win := entries("flowyprompt_v0.3.0_windows_amd64.zip")
	if win["flowyprompt_v0.3.0_windows_amd64/flowyprompt.exe"] != "-rwxr-xr-x binary for windows/amd64" || len(win) != 3 {
		t.Errorf("windows archive %v", win)
	}

	// Reproducible: the same inputs, another day, the same archives.
	before, _ := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err := os.Chtimes(readme, time.Now(), time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"archive", "-version", "v0.3.0", "-bins", bins, "-platforms", strings.Join(allPlatforms, " "),
		"-mtime", "1790000000", "-sum", "flowyprompt.mcpb", "-out", out, readme, license}); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(filepath.Join(out, "SHA256SUMS")); !bytes.Equal(before, after) {
		t.Errorf("a second run changed the archives:\n%s\n%s", before, after)
	}
}

package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// archives writes one archive per platform into out: the binary from
// bins/<os>-<arch>/ with the given files (README.md, LICENSE), under a
// folder named like the archive; tar.gz, or zip for Windows, whose users
// open it without extra tools. Entries carry mtime, fixed owners and
// modes, so the same binaries give the same archives.
func archives(out, bins, version string, platforms, files []string, mtime time.Time) ([]string, error) {
	var names []string
	for _, p := range platforms {
		goos, arch, ok := strings.Cut(p, "/")
		if !ok {
			return nil, fmt.Errorf("archive: platform %q is not os/arch", p)
		}
		exe := "flowyprompt"
		if goos == "windows" {
			exe += ".exe"
		}
		type entry struct {
			name string
			path string
			mode int64
		}
		entries := []entry{{exe, filepath.Join(bins, goos+"-"+arch, exe), 0o755}}
		for _, f := range files {
			entries = append(entries, entry{filepath.Base(f), f, 0o644})
		}
		base := fmt.Sprintf("flowyprompt_%s_%s_%s", version, goos, arch)
		var buf bytes.Buffer
		var err error
		if goos == "windows" {
			base += ".zip"
			zw := zip.NewWriter(&buf)
			for _, e := range entries {
				h := &zip.FileHeader{Name: strings.TrimSuffix(base, ".zip") + "/" + e.name, Method: zip.Deflate, Modified: mtime}
				h.SetMode(os.FileMode(e.mode))
				w, cerr := zw.CreateHeader(h)
				if cerr != nil {
					return nil, fmt.Errorf("archive %s: %w", base, cerr)
				}
				if err = copyFile(w, e.path); err != nil {
					return nil, fmt.Errorf("archive %s: %w", base, err)
				}
			}
			err = zw.Close()
		} else {
			base += ".tar.gz"
			gz := gzip.NewWriter(&buf)
			tw := tar.NewWriter(gz)
			for _, e := range entries {
				fi, serr := os.Stat(e.path)
				if serr != nil {
					return nil, fmt.Errorf("archive %s: %w", base, serr)
				}
				h := &tar.Header{Name: strings.TrimSuffix(base, ".tar.gz") + "/" + e.name, Mode: e.mode, Size: fi.Size(),
					ModTime: mtime, Typeflag: tar.TypeReg, Uname: "root", Gname: "root", Format: tar.FormatPAX}
				if err = tw.WriteHeader(h); err != nil {
					return nil, fmt.Errorf("archive %s: %w", base, err)
				}
				if err = copyFile(tw, e.path); err != nil {
					return nil, fmt.Errorf("archive %s: %w", base, err)
				}
			}
			err = tw.Close()
			if err == nil {
				err = gz.Close()
			}
		}
		if err != nil {
			return nil, fmt.Errorf("archive %s: %w", base, err)
		}
		if err := os.WriteFile(filepath.Join(out, base), buf.Bytes(), 0o644); err != nil {
			return nil, fmt.Errorf("archive: %w", err)
		}
		names = append(names, base)
	}
	return names, nil
}

func copyFile(w io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

// sha256sums writes out/SHA256SUMS for the named files of out, in the
// format `sha256sum -c` checks.
func sha256sums(out string, names []string) error {
	names = slices.Sorted(slices.Values(names))
	var b strings.Builder
	for _, n := range names {
		sum, err := fileSHA256(filepath.Join(out, n))
		if err != nil {
			return fmt.Errorf("SHA256SUMS: %w", err)
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, n)
	}
	if err := os.WriteFile(filepath.Join(out, "SHA256SUMS"), []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("SHA256SUMS: %w", err)
	}
	return nil
}

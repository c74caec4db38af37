// Command release builds the release artifacts the Makefile does not
// build with go build itself (make bundle, make release):
//
//	release bundle  -version V -bins DIR -platforms "linux/amd64 ..." -license FILE -out DIR
//	release archive -version V -bins DIR -platforms "..." -mtime UNIX -sum FILE -out DIR FILE...
//	release server  -version V -bundle FILE -out FILE
//
// bundle lays out the folder mcpb pack turns into flowyprompt.mcpb: the
// manifest (manifest.json.tmpl, with the version made semver-valid), the
// icon, and the binaries where the manifest's commands expect them, the
// two macOS ones joined into one universal binary. archive writes one
// archive per platform, with the FILEs beside the binary, and SHA256SUMS
// over them and each -sum file. server writes the server.json that
// publishes the release's bundle in the MCP Registry (server.go).
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "release: %v\n", err)
		os.Exit(1)
	}
}

type sums []string

func (s *sums) String() string     { return strings.Join(*s, ",") }
func (s *sums) Set(v string) error { *s = append(*s, v); return nil }

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: release bundle|archive|server [flags]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	version := fs.String("version", "", "the version, as `git describe --tags --always --dirty` prints it")
	bins := fs.String("bins", "", "`folder` of the binaries, one <os>-<arch> folder each")
	platforms := fs.String("platforms", "", "space-separated os/arch `list`")
	out := fs.String("out", "", "output `path`: a folder (bundle, archive) or the file to write (server)")
	license := fs.String("license", "LICENSE", "licence `file` (bundle)")
	mtime := fs.Int64("mtime", 0, "modification time of archive entries, Unix `seconds` (archive; the commit's time gives reproducible archives)")
	bundle := fs.String("bundle", "", "the bundle `file` (server)")
	var sum sums
	fs.Var(&sum, "sum", "a `file` in -out that SHA256SUMS lists too (archive; repeatable)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if args[0] == "server" {
		if *version == "" || *bundle == "" || *out == "" {
			return errors.New("server: -version, -bundle and -out are required")
		}
		return writeServerJSON(*out, *version, *bundle)
	}
	if *version == "" || *bins == "" || *out == "" || strings.TrimSpace(*platforms) == "" {
		return fmt.Errorf("%s: -version, -bins, -platforms and -out are required", args[0])
	}
	plats := strings.Fields(*platforms)
	switch args[0] {
	case "bundle":
		return stageBundle(*out, *bins, *version, plats, *license)
	case "archive":
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return fmt.Errorf("archive: %w", err)
		}
		names, err := archives(*out, *bins, *version, plats, fs.Args(), time.Unix(*mtime, 0).UTC())
		if err != nil {
			return err
		}
		for _, s := range sum {
			names = append(names, filepath.Base(s))
		}
		return sha256sums(*out, names)
	}
	return fmt.Errorf("unknown command %q: bundle, archive or server", args[0])
}

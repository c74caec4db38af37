package templates

import (
	"context"
	"embed"
	"io/fs"
	"sync"
	"time"
)

// examplesFS is the built-in library: `flowyprompt serve` works on a fresh
// machine with no network, token or folder. Its flows/ folder holds a flow
// of the examples, so a fresh install shows flows as well, and its
// partials/ folder the partial an example includes.
//
//go:embed examples
var examplesFS embed.FS

// embeddedInfo describes the built-in example library.
var embeddedInfo = SourceInfo{Kind: "embedded", Location: "built-in examples"}

type embeddedSource struct {
	load func() *Catalog
}

var embedded = &embeddedSource{load: sync.OnceValue(func() *Catalog {
	return Build(embeddedFiles(), BuildOptions{Info: embeddedInfo})
})}

// Embedded returns the source of the example templates compiled into the
// binary. The files never change, so they are parsed once, on first Load.
func Embedded() Source { return embedded }

func (s *embeddedSource) Info() SourceInfo { return embeddedInfo }

// FreshFor: the examples change only with the binary.
func (s *embeddedSource) FreshFor() time.Duration { return EmbeddedFreshness }

func (s *embeddedSource) Load(ctx context.Context) (*Catalog, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.load(), nil
}

// embeddedFiles lists the embedded examples as Files: every file of
// examples/ a library reads (IsLibraryFile), "examples/NAME.json",
// "examples/NAME.prompt.yml", "examples/flows/NAME.json" and the like.
func embeddedFiles() []File {
	var names []string
	err := fs.WalkDir(examplesFS, "examples", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && IsLibraryFile(p) {
			names = append(names, p)
		}
		return err
	})
	if err != nil {
		panic("templates: bad embedded examples: " + err.Error())
	}
	files := make([]File, 0, len(names))
	for _, n := range names {
		data, err := examplesFS.ReadFile(n)
		files = append(files, File{Path: n, Data: data, Err: err})
	}
	return files
}

package folder

import (
	"bytes"
	"io"
	"os"

	"github.com/flowyprompt/flowyprompt/templates"
)

// unchangedBuffer is the size of the buffer a load compares files through.
const unchangedBuffer = 32 << 10

// unchanged lets a load take, for a file that still holds exactly what the
// last catalog holds for it, the catalog's bytes instead of a new copy:
// the file is read through one small buffer and compared, so a rebuild
// that finds most files as they were (the watcher's first, a refresh, an
// edit to one file) allocates next to nothing for them, and
// templates.Rebuild then shares their entries too. It belongs to one load
// and is not safe for concurrent use.
type unchanged struct {
	known   map[string][]byte // slash path → the last catalog's bytes
	scratch []byte
	hits    int // files found unchanged
}

// found is how many files were found unchanged so far (0 for nil).
func (u *unchanged) found() int {
	if u == nil {
		return 0
	}
	return u.hits
}

// newUnchanged remembers the files c serves. A nil c gives nil, which
// knows no file.
func newUnchanged(c *templates.Catalog) *unchanged {
	if c == nil {
		return nil
	}
	known := make(map[string][]byte, c.Len())
	for _, e := range c.Templates() {
		known[e.Path] = e.Raw
	}
	return &unchanged{known: known}
}

// same returns the known bytes of rel when f, a regular file of size
// bytes read from its start, holds exactly them. Otherwise it returns nil
// with f rewound for a full read, or the error of rewinding it.
func (u *unchanged) same(f *os.File, rel string, size int64) ([]byte, error) {
	if u == nil {
		return nil, nil
	}
	known, ok := u.known[rel]
	if !ok || int64(len(known)) != size {
		return nil, nil
	}
	if u.scratch == nil {
		u.scratch = make([]byte, unchangedBuffer)
	}
	rest := known
	for {
		n, err := f.Read(u.scratch)
		if n > len(rest) || !bytes.Equal(u.scratch[:n], rest[:n]) {
			break
		}
		rest = rest[n:]
		if err == io.EOF && len(rest) == 0 {
			u.hits++
			return known, nil
		}
		if err != nil {
			// Changed meanwhile, or unreadable: the full read says which.
			break
		}
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return nil, nil
}

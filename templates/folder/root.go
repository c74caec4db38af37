package folder

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/flowyprompt/flowyprompt/templates"
)

var (
	// errOutside: a symbolic link on the path leads out of the folder.
	errOutside = errors.New("a symbolic link leads out of the template folder")
	// errNotRegular: the path names a folder, a named pipe or a device.
	errNotRegular = errors.New("not a regular file")
)

// open opens rel, a clean slash path inside the folder, through root: the
// root refuses a path or a symbolic link leading out of the folder when the
// file is opened, so a link swapped in after any check still cannot lead
// out. (Checking a path by name and then opening it by name loses that race
// now and then.)
//
// os.Root also refuses links that end inside the folder but are absolute
// (ln -s "$PWD/docs/guide.md") or leave the folder on their way back in;
// the folder has always followed those. When the root refuses a path, the
// path is resolved by name; if it ends inside the folder, what it resolves
// to is opened instead, again through root, so that a link swapped in
// meanwhile still cannot lead out. If it ends outside, open returns
// errOutside.
func (d *Source) open(root *os.Root, rel string) (*os.File, error) {
	name := filepath.FromSlash(rel)
	f, err := root.OpenFile(name, openFlags, 0)
	if err == nil || errors.Is(err, os.ErrNotExist) {
		return f, err
	}
	resolved, rerr := d.evalSymlinks(filepath.Join(d.dir, name))
	if rerr != nil {
		return nil, rerr
	}
	inner, ok := d.inside(resolved)
	switch {
	case !ok:
		return nil, errOutside
	case inner == name:
		// No link to resolve: the root refused the file for another
		// reason (permissions), which stands.
		return nil, err
	}
	return root.OpenFile(inner, openFlags, 0)
}

// inside returns resolved, a path with no links left, relative to the
// folder, if it is inside the folder.
func (d *Source) inside(resolved string) (string, bool) {
	dir, err := d.evalSymlinks(d.dir)
	if err != nil {
		return "", false
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return "", false
	}
	resolved, err = filepath.Abs(resolved)
	if err != nil {
		return "", false
	}
	rel, err := filepath.Rel(dir, resolved)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}

// readRegular reads f whole. A file that is not a regular one gives
// errNotRegular, and one over limit bytes TEMPLATE_TOO_LARGE naming rel:
// the size is checked before reading, so an oversized file is never read
// whole. When u knows rel's bytes and the file still holds exactly them,
// they are returned instead of a copy (u may be nil).
func readRegular(f *os.File, rel string, limit int64, u *unchanged) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", rel, err)
	}
	if !st.Mode().IsRegular() {
		return nil, errNotRegular
	}
	if st.Size() > limit {
		return nil, templates.TooLarge(rel, st.Size(), limit)
	}
	known, err := u.same(f, rel, st.Size())
	if err != nil || known != nil {
		return known, err
	}
	// One allocation of the size the file has: the bytes are kept as long
	// as the template is served, and growing a buffer as it fills would
	// leave up to twice their size in garbage and in spare capacity.
	data := make([]byte, st.Size())
	n, err := io.ReadFull(f, data)
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		// It shrank between Stat and Read.
		return data[:n], nil
	case err != nil:
		return nil, err
	}
	// It may have grown meanwhile: one byte more tells.
	var probe [1]byte
	switch m, err := f.Read(probe[:]); {
	case m == 0 && (err == io.EOF || err == nil):
		return data, nil
	case m == 0:
		return nil, err
	}
	// Read on, one byte past the limit at most.
	rest, err := io.ReadAll(io.LimitReader(f, limit-int64(n)))
	if err != nil {
		return nil, err
	}
	data = append(append(data, probe[0]), rest...)
	if int64(len(data)) > limit {
		return nil, templates.TooLarge(rel, max(st.Size(), int64(len(data))), limit)
	}
	return data, nil
}

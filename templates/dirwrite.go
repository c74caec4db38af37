package templates

import (
	"context"
	"fmt"
	"mime"
	"os"
	"path/filepath"
	"strings"

	"github.com/flowyprompt/flowyprompt/internal/fault"
)

// SaveTemplate writes data as NAME.json in the folder, atomically (a
// temporary file renamed into place), so the watcher never sees half a
// file. message is unused: a folder has no history. It returns the path.
func (d *DirSource) SaveTemplate(_ context.Context, name string, data []byte, _ string) (string, error) {
	if err := ValidateName(name); err != nil {
		return "", err
	}
	path := filepath.Join(d.dir, name+".json")
	tmp, err := os.CreateTemp(d.dir, "."+name+".*.tmp")
	if err != nil {
		return "", d.writeFault(name, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return "", d.writeFault(name, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", d.writeFault(name, err)
	}
	if err := tmp.Close(); err != nil {
		return "", d.writeFault(name, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return "", d.writeFault(name, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", d.writeFault(name, err)
	}
	return path, nil
}

func (d *DirSource) writeFault(name string, err error) error {
	return &fault.Error{Code: fault.Internal, What: fmt.Sprintf("could not save template %s in %s", name, d.dir),
		Why: err.Error(), How: "check that the folder exists and the server may write to it", Err: err}
}

// ReadResource reads a file of the folder named by a template's
// `resources` list. Paths are relative to the folder and may not leave it.
func (d *DirSource) ReadResource(_ context.Context, rel string) ([]byte, string, error) {
	clean := filepath.Clean(filepath.FromSlash(rel))
	if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return nil, "", &fault.Error{Code: fault.ResourceNotFound, What: fmt.Sprintf("resource %q is outside the template folder", rel),
			Why: "resources are read from the template folder only", How: "use a path relative to the template folder"}
	}
	path := filepath.Join(d.dir, clean)
	st, err := os.Stat(path)
	if err == nil && st.Size() > int64(d.maxSize()) {
		return nil, "", TooLarge(rel, st.Size(), int64(d.maxSize()))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", &fault.Error{Code: fault.ResourceNotFound, What: fmt.Sprintf("cannot read resource %q", rel),
			Why: err.Error(), How: "check the path in the template's resources list", Err: err}
	}
	typ := mime.TypeByExtension(filepath.Ext(path))
	if typ == "" {
		typ = "text/plain"
	}
	return data, typ, nil
}

func (d *DirSource) maxSize() int {
	if d.opts.MaxFileSize > 0 {
		return d.opts.MaxFileSize
	}
	return DefaultMaxFileSize
}

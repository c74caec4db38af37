package templates

import (
	"context"
	"fmt"
	"log/slog"
	"mime"
	"os"
	"path/filepath"
	"strings"

	"github.com/flowyprompt/flowyprompt/internal/fault"
)

// SaveTemplate writes data atomically (a temporary file renamed into place),
// so the watcher never sees half a file. A template the folder already has
// is replaced in its own file, wherever it is (a subfolder, another file
// name): writing NAME.json beside it would leave two files declaring the
// same name, and the older one would win. A new name becomes NAME.json in
// the folder. message is unused: a folder has no history. It returns the
// path.
func (d *DirSource) SaveTemplate(ctx context.Context, name string, data []byte, _ string) (string, error) {
	if err := ValidateName(name); err != nil {
		return "", err
	}
	path := filepath.Join(d.dir, name+".json")
	if rel, ok := d.templatePath(ctx, name); ok {
		path = filepath.Join(d.dir, filepath.FromSlash(rel))
	}
	// The temporary file must be in the target's folder for the rename to
	// be atomic; its leading dot keeps the watcher and Load off it.
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+name+".*.tmp")
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

// templatePath returns the file, relative to the folder, that holds the
// template name now, read afresh so a file added since the last load
// counts; failing that, the file of the version being served (one that
// is half-way through an edit is invalid on disk but still served).
func (d *DirSource) templatePath(ctx context.Context, name string) (string, bool) {
	if files, err := d.readFiles(ctx); err == nil {
		quiet := d.opts
		quiet.Logger = slog.New(slog.DiscardHandler) // the watcher reports problems, not a save
		if e, ok := Build(files, quiet).Lookup(name); ok {
			return e.Path, true
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.last.Lookup(name); ok {
		return e.Path, true
	}
	return "", false
}

func (d *DirSource) writeFault(name string, err error) error {
	return &fault.Error{Code: fault.Internal, What: fmt.Sprintf("could not save template %s in %s", name, d.dir),
		Why: err.Error(), How: "check that the folder exists and the server may write to it", Err: err}
}

// ReadResource reads a file of the folder named by a template's
// `resources` list. Paths are relative to the folder and may not leave it.
func (d *DirSource) ReadResource(_ context.Context, rel string) ([]byte, string, error) {
	clean := filepath.Clean(filepath.FromSlash(rel))
	outside := &fault.Error{Code: fault.ResourceNotFound, What: fmt.Sprintf("resource %q is outside the template folder", rel),
		Why: "resources are read from the template folder only, never from hidden files or through links leading out of it",
		How: "use a path relative to the template folder, to a file inside it"}
	if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) || hidden(clean) {
		return nil, "", outside
	}
	// A symbolic link inside the folder may point anywhere: the file read
	// must resolve to a place inside the folder.
	path, err := filepath.EvalSymlinks(filepath.Join(d.dir, clean))
	if err == nil {
		root, rerr := filepath.EvalSymlinks(d.dir)
		if rel, lerr := filepath.Rel(root, path); rerr != nil || lerr != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return nil, "", outside
		}
	} else {
		path = filepath.Join(d.dir, clean) // missing: os.ReadFile reports it
	}
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

// hidden reports whether a cleaned relative path goes through a dot-file
// or dot-folder (.git, .env), which are never resources.
func hidden(clean string) bool {
	for _, part := range strings.Split(filepath.ToSlash(clean), "/") {
		if strings.HasPrefix(part, ".") {
			return true
		}
	}
	return false
}

func (d *DirSource) maxSize() int {
	if d.opts.MaxFileSize > 0 {
		return d.opts.MaxFileSize
	}
	return DefaultMaxFileSize
}

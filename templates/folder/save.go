package folder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/templates"
)

// SaveTemplate writes data atomically (a temporary file renamed into place),
// so the watcher never sees half a file. A template the folder already has
// is replaced in its own file, wherever it is (a subfolder, another file
// name): writing NAME.json beside it would leave two files declaring the
// same name, and the older one would win. A new name becomes NAME.json in
// the folder, unless that file holds another, valid template: replacing it
// would silently delete that template, so the save is refused with
// WRITE_CONFLICT. (A NAME.json holding an invalid template is replaced.)
// message is unused: a folder has no history. It returns the path.
func (d *Source) SaveTemplate(ctx context.Context, name string, data []byte, _ string) (string, error) {
	if err := templates.ValidateName(name); err != nil {
		return "", err
	}
	rel, err := d.saveTarget(ctx, name)
	if err != nil {
		return "", err
	}
	path := filepath.Join(d.dir, filepath.FromSlash(rel))
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

// saveTarget returns the file, relative to the folder, that a save of name
// writes: the file holding the template now, or NAME.json for a new name
// unless that file holds another template.
func (d *Source) saveTarget(ctx context.Context, name string) (string, error) {
	// Read afresh, so that a file added or changed since the last load
	// counts. An unreadable folder leaves files empty: the write reports it.
	files, _ := d.readFiles(ctx)
	if rel, ok := d.templatePath(name, files); ok {
		return rel, nil
	}
	rel := name + ".json"
	if other, ok := d.heldTemplate(rel, files); ok && other != name {
		return "", &fault.Error{Code: fault.WriteConflict,
			What:    fmt.Sprintf("could not save template %s in %s", name, d.dir),
			Why:     fmt.Sprintf("%s holds template %q: writing %s there would delete it", rel, other, name),
			How:     fmt.Sprintf("rename %s to %s.json (the name it declares), or save the template under another name", rel, other),
			Details: map[string]any{"file": rel, "template": other}}
	}
	return rel, nil
}

// templatePath returns the file, relative to the folder, that holds the
// template name in files (the folder as just read); failing that, the file
// of the version being served (one that is half-way through an edit is
// invalid on disk but still served). Only metadata.name is decoded: a full
// parse of every file to find one path is what a save must not cost.
func (d *Source) templatePath(name string, files []templates.File) (string, bool) {
	var candidates []templates.File
	for _, f := range files {
		if declaredName(f) == name {
			candidates = append(candidates, f)
		}
	}
	switch len(candidates) {
	case 0:
	case 1:
		return candidates[0].Path, true
	default:
		// Several files declare the name: the one a load serves is the
		// first valid one by path, as Build decides.
		if e, ok := templates.Build(candidates, d.quietOptions()).Lookup(name); ok {
			return e.Path, true
		}
		return candidates[0].Path, true
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.last.Lookup(name); ok {
		return e.Path, true
	}
	return "", false
}

// heldTemplate returns the name of the template the file rel holds, if it
// holds one: the file as just read when it is valid, or else the version of
// it the catalog serves (an invalid file is usually an edit under way, and
// its last valid version is still served). A file that does not exist
// holds nothing, whatever the last load saw.
func (d *Source) heldTemplate(rel string, files []templates.File) (string, bool) {
	i := slices.IndexFunc(files, func(f templates.File) bool { return f.Path == rel })
	if i < 0 {
		return "", false
	}
	for _, e := range templates.Build(files[i:i+1], d.quietOptions()).Templates() {
		return e.Template.Metadata.Name, true
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, e := range d.last.Templates() {
		if e.Path == rel {
			return e.Template.Metadata.Name, true
		}
	}
	return "", false
}

// declaredName is the metadata.name a template file declares, or "" when
// it cannot be read as a JSON object with one.
func declaredName(f templates.File) string {
	if f.Err != nil {
		return ""
	}
	var doc struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if json.Unmarshal(f.Data, &doc) != nil {
		return ""
	}
	return doc.Metadata.Name
}

func (d *Source) writeFault(name string, err error) error {
	return &fault.Error{Code: fault.Internal, What: fmt.Sprintf("could not save template %s in %s", name, d.dir),
		Why: err.Error(), How: "check that the folder exists and the server may write to it", Err: err}
}

// ReadResource reads a file of the folder named by a template's
// `resources` list. Paths are relative to the folder and may not leave it,
// directly or through a symbolic link, nor go through a hidden file or
// folder.
func (d *Source) ReadResource(_ context.Context, rel string) ([]byte, string, error) {
	clean, err := templates.RelPath(rel)
	if err != nil {
		return nil, "", outsideFault(rel)
	}
	// A symbolic link inside the folder may point anywhere: the file read
	// must resolve to a place inside the folder. Only a file that does not
	// exist is answered without that check, as not found; any other
	// failure to resolve is refused rather than read unresolved.
	path, err := d.evalSymlinks(filepath.Join(d.dir, filepath.FromSlash(clean)))
	if err != nil {
		return nil, "", resourceUnreadable(rel, err)
	}
	if !d.inside(path) {
		return nil, "", outsideFault(rel)
	}
	st, err := os.Stat(path)
	if err == nil && st.Size() > int64(d.maxSize()) {
		return nil, "", templates.TooLarge(rel, st.Size(), int64(d.maxSize()))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", resourceUnreadable(rel, err)
	}
	typ := mime.TypeByExtension(filepath.Ext(path))
	if typ == "" {
		typ = "text/plain"
	}
	return data, typ, nil
}

// inside reports whether the resolved path is inside the folder. The
// folder's own resolution is cached; a path outside it is checked once more
// against a fresh one, in case the folder (a symbolic link itself) was
// pointed elsewhere since.
func (d *Source) inside(resolved string) bool {
	for _, fresh := range []bool{false, true} {
		root, err := d.resolvedRoot(fresh)
		if err != nil {
			return false
		}
		rel, err := filepath.Rel(root, resolved)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// resolvedRoot returns the folder with its symbolic links resolved,
// resolving it only on first use (or when fresh is set) rather than on
// every read. A failure is not cached: the folder may appear later.
func (d *Source) resolvedRoot(fresh bool) (string, error) {
	d.rootMu.Lock()
	defer d.rootMu.Unlock()
	if d.root != "" && !fresh {
		return d.root, nil
	}
	root, err := d.evalSymlinks(d.dir)
	if err != nil {
		return "", err
	}
	d.root = root
	return root, nil
}

func outsideFault(rel string) *fault.Error {
	return &fault.Error{Code: fault.ResourceNotFound, What: fmt.Sprintf("resource %q is outside the template folder", rel),
		Why: "resources are read from the template folder only, never from hidden files or through links leading out of it",
		How: "use a path relative to the template folder, to a file inside it"}
}

func resourceUnreadable(rel string, err error) *fault.Error {
	how := "check the path in the template's resources list"
	if !errors.Is(err, fs.ErrNotExist) {
		how = "check that the file is readable by the server, and the path in the template's resources list"
	}
	return &fault.Error{Code: fault.ResourceNotFound, What: fmt.Sprintf("cannot read resource %q", rel),
		Why: err.Error(), How: how, Err: err}
}

func (d *Source) maxSize() int {
	if d.opts.MaxFileSize > 0 {
		return d.opts.MaxFileSize
	}
	return templates.DefaultMaxFileSize
}

package folder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"

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
// The write goes through the folder's os.Root, as reads do, so a subfolder
// swapped for a link cannot take it out of the folder.
// message is unused: a folder has no history. Its Location is the file's
// path in the folder (slash-separated), never the folder's own path; a
// folder proposes nothing (Proposal nil).
func (d *Source) SaveTemplate(ctx context.Context, name string, data []byte, _ string) (templates.Saved, error) {
	if err := templates.ValidateName(name); err != nil {
		return templates.Saved{}, err
	}
	rel, err := d.saveTarget(ctx, name)
	if err != nil {
		return templates.Saved{}, err
	}
	root, err := os.OpenRoot(d.dir)
	if err != nil {
		return templates.Saved{}, d.writeFault(name, err)
	}
	defer root.Close()
	if err := replaceFile(root, rel, "."+name+".", data); err != nil {
		return templates.Saved{}, d.writeFault(name, err)
	}
	// The file as the library names it: the folder's own path is the
	// server's business, not the client's.
	return templates.Saved{Location: rel}, nil
}

// replaceFile writes data to a new temporary file beside rel, named prefix
// with a random suffix, and renames it over rel. The temporary file must be
// in rel's folder for the rename to be atomic; a prefix with a leading dot
// keeps the watcher and Load off it.
func replaceFile(root *os.Root, rel, prefix string, data []byte) error {
	dir, _ := path.Split(rel)
	var (
		tmp string
		f   *os.File
		err error
	)
	for range 100 {
		tmp = filepath.FromSlash(dir + prefix + strconv.FormatUint(uint64(rand.Uint32()), 10) + ".tmp")
		f, err = root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	// Gone once renamed; left behind by anything that failed before.
	defer root.Remove(tmp)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	// The file is created private, so no one reads it half-written; once
	// complete it is as readable as any template.
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return root.Rename(tmp, filepath.FromSlash(rel))
}

// saveTarget returns the file, relative to the folder, that a save of name
// writes: the file holding the template now, or NAME.json for a new name
// unless that file holds another template.
func (d *Source) saveTarget(ctx context.Context, name string) (string, error) {
	// Read afresh, so that a file added or changed since the last load
	// counts. An unreadable folder leaves files empty: the write reports it.
	files, _ := d.readFiles(ctx, nil)
	if rel, ok := d.templatePath(name, files); ok {
		return rel, templates.SaveOverFormat(name, rel)
	}
	rel := name + ".json"
	if other, ok := d.heldTemplate(rel, files); ok && other != name {
		return "", &fault.Error{Code: fault.WriteConflict,
			What:    fmt.Sprintf("could not save template %s in the template folder", name),
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
	return &fault.Error{Code: fault.Internal, What: fmt.Sprintf("could not save template %s in the template folder", name),
		Why: err.Error(), How: "check that the folder exists and the server may write to it", Err: err}
}

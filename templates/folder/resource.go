package folder

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"os"
	"path"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/templates"
)

// ReadResource reads a file of the folder named by a template's
// `resources` list. Paths are relative to the folder and may not leave it,
// directly or through a symbolic link, nor go through a hidden file or
// folder. The file is opened through the folder's os.Root, so a link
// swapped in while it is read cannot lead out either. Its type comes from
// the extension of the path as listed, as resources/list gives it.
func (d *Source) ReadResource(_ context.Context, rel string) ([]byte, string, error) {
	clean, err := templates.RelPath(rel)
	if err != nil {
		return nil, "", outsideFault(rel)
	}
	root, err := os.OpenRoot(d.dir)
	if err != nil {
		return nil, "", resourceUnreadable(rel, err)
	}
	defer root.Close()
	f, err := d.open(root, clean)
	switch {
	case errors.Is(err, errOutside):
		return nil, "", outsideFault(rel)
	case err != nil:
		return nil, "", resourceUnreadable(rel, err)
	}
	defer f.Close()
	data, err := readRegular(f, rel, int64(d.maxSize()), nil)
	switch {
	case fault.As(err) != nil:
		return nil, "", err
	case err != nil:
		return nil, "", resourceUnreadable(rel, err)
	}
	typ := mime.TypeByExtension(path.Ext(clean))
	if typ == "" {
		typ = "text/plain"
	}
	return data, typ, nil
}

// CheckResource reports whether ReadResource would read rel, with the
// same errors, without reading it: resources/list advertises only the
// files that are there.
func (d *Source) CheckResource(_ context.Context, rel string) error {
	clean, err := templates.RelPath(rel)
	if err != nil {
		return outsideFault(rel)
	}
	root, err := os.OpenRoot(d.dir)
	if err != nil {
		return resourceUnreadable(rel, err)
	}
	defer root.Close()
	f, err := d.open(root, clean)
	switch {
	case errors.Is(err, errOutside):
		return outsideFault(rel)
	case err != nil:
		return resourceUnreadable(rel, err)
	}
	defer f.Close()
	st, err := f.Stat()
	switch {
	case err != nil:
		return resourceUnreadable(rel, err)
	case !st.Mode().IsRegular():
		return resourceUnreadable(rel, errNotRegular)
	case st.Size() > int64(d.maxSize()):
		return templates.TooLarge(rel, st.Size(), int64(d.maxSize()))
	}
	return nil
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

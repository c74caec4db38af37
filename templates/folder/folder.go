package folder

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/fsnotify/fsnotify"
	"golang.org/x/sync/semaphore"
)

// Default timings of the directory watcher.
const (
	// dirDebounce collects the burst of events one save makes (editors
	// write a temporary file, rename it, touch the folder) into one rebuild.
	dirDebounce = 150 * time.Millisecond
	// dirPoll is how often a deleted folder is looked for again: fsnotify
	// cannot watch a folder that does not exist.
	dirPoll = time.Second
)

// Source reads templates from a local folder: the *.json files in it and
// in its direct subfolders (one level; dot-folders such as .git are
// skipped), named by their path relative to the folder. It implements
// templates.Source and templates.Watcher.
//
// Files are opened through an os.Root for the folder (see open): a
// template file that is a symbolic link leading out of the folder is never
// read, but reported in Catalog.Invalid like any invalid file; links that
// stay inside the folder are followed.
//
// It remembers the last catalog it built: when a file that was valid turns
// invalid (an editor half-way through a save), the last valid version keeps
// being served and the problem is reported in Catalog.Invalid with Kept set.
type Source struct {
	dir    string
	opts   templates.BuildOptions
	logger *slog.Logger

	debounce, poll time.Duration

	mu   sync.Mutex // serialises loads and guards last
	last *templates.Catalog

	// evalSymlinks resolves links that os.Root will not follow
	// (filepath.EvalSymlinks; tests replace it).
	evalSymlinks func(string) (string, error)

	// afterRebuild, when set (tests), runs after each watcher rebuild.
	afterRebuild func(c *templates.Catalog, delivered bool, err error)

	// The versions read from the folder's Git repository (history.go):
	// git runs at once, bounded, and what they read.
	gitRuns *semaphore.Weighted
	gitRead gitCache
	// gitStarted, when set (tests), is called as each git process is
	// started, and what it returns once it has ended.
	gitStarted func(args []string) (ended func())
}

// New returns a source for the folder dir. opts.Info defaults to kind
// "directory" with the folder's absolute path as the location.
func New(dir string, opts templates.BuildOptions) *Source {
	if opts.Info.Kind == "" {
		loc := dir
		if abs, err := filepath.Abs(dir); err == nil {
			loc = abs
		}
		opts.Info = templates.SourceInfo{Kind: "directory", Location: loc}
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	return &Source{dir: dir, opts: opts, logger: logger, debounce: dirDebounce, poll: dirPoll,
		evalSymlinks: filepath.EvalSymlinks, gitRuns: semaphore.NewWeighted(maxGitRuns)}
}

// quietOptions are the build options without logging, for builds whose
// problems are not news: a rebuild of files already reported, or the files
// a save looks at (the watcher reports problems, not a save).
func (d *Source) quietOptions() templates.BuildOptions {
	quiet := d.opts
	quiet.Logger = slog.New(slog.DiscardHandler)
	return quiet
}

// Info says which folder the source reads.
func (d *Source) Info() templates.SourceInfo { return d.opts.Info }

// Freshness is how long a folder's templates may be cached: anyone may
// edit them at any moment, so only briefly (the change notifications of
// watched folders still arrive at once).
const Freshness = 5 * time.Second

// FreshFor returns Freshness.
func (d *Source) FreshFor() time.Duration { return Freshness }

// Load reads the folder now. It fails only when the folder itself cannot be
// read; invalid files are reported in the catalog.
func (d *Source) Load(ctx context.Context) (*templates.Catalog, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.loadLocked(ctx)
}

func (d *Source) loadLocked(ctx context.Context) (*templates.Catalog, error) {
	u := newUnchanged(d.last)
	files, err := d.readFiles(ctx, u)
	if err != nil {
		return nil, err
	}
	// Rebuilding from the last catalog parses only the files that changed
	// and shares the others' entries with it: the catalog the library still
	// serves is that one, and a rebuild that found nothing new (the
	// watcher's first, a refresh) would otherwise hold every template
	// twice, besides the garbage of parsing them all again.
	c := templates.Rebuild(d.last, files, d.opts)
	c = d.keepPrevious(c, files)
	d.last = c
	d.logger.Debug("template folder read", "folder", d.dir, "templates", c.Len(), "invalid", len(c.Invalid()),
		"unchanged", u.found())
	return c, nil
}

// keepPrevious replaces files that turned invalid with their last valid
// version, so a half-written file never empties the catalog.
func (d *Source) keepPrevious(c *templates.Catalog, files []templates.File) *templates.Catalog {
	if d.last == nil || len(c.Invalid()) == 0 {
		return c
	}
	prevByPath := map[string]*templates.Entry{}
	for _, e := range d.last.Templates() {
		prevByPath[e.Path] = e
	}
	var kept []templates.Invalid
	replaced := slices.Clone(files)
	for _, inv := range c.Invalid() {
		prev, ok := prevByPath[inv.Path]
		if !ok {
			continue
		}
		// Another file may have taken the name meanwhile; then the old
		// version would only be a duplicate.
		if other, taken := c.Lookup(prev.Template.Metadata.Name); taken && other.Path != inv.Path {
			continue
		}
		for i := range replaced {
			if replaced[i].Path == inv.Path {
				replaced[i] = templates.File{Path: inv.Path, Data: prev.Raw}
			}
		}
		// templates.LogProblems logs it, once, as kept.
		kept = append(kept, templates.Invalid{Path: inv.Path, Err: inv.Err, Kept: true})
	}
	if len(kept) == 0 {
		return c
	}
	rebuilt := templates.Rebuild(c, replaced, d.opts)
	// A file whose last version fails too (a partial it includes is the
	// one that broke) is not kept: the rebuild reports it.
	kept = slices.DeleteFunc(kept, func(inv templates.Invalid) bool {
		e, ok := rebuilt.Lookup(prevByPath[inv.Path].Template.Metadata.Name)
		return !ok || e.Path != inv.Path
	})
	return rebuilt.WithInvalid(kept)
}

func (d *Source) missingFolder(err error) *fault.Error {
	what := fmt.Sprintf("template folder %s cannot be read", d.dir)
	how := "create the folder, or point --templates / TEMPLATES_DIR at a folder of *.json templates"
	switch {
	case errors.Is(err, fs.ErrNotExist):
		what = fmt.Sprintf("template folder %s does not exist", d.dir)
	case errors.Is(err, fs.ErrPermission):
		how = "give this user read access to the folder, or point --templates / TEMPLATES_DIR elsewhere"
	}
	return &fault.Error{
		Code:    fault.InvalidArgument,
		What:    what,
		Why:     err.Error(),
		How:     how,
		Details: map[string]any{"folder": d.dir},
		Err:     err,
	}
}

// Files reads the folder's template files as a load does, without parsing
// them: the *.json files of the folder and of its direct subfolders, named
// by their slash path relative to the folder and sorted by it. A file the
// source refuses (larger than the limit, a link leading out of the folder,
// unreadable) comes with Err set and no data. It fails only when the folder
// itself cannot be read.
func (d *Source) Files(ctx context.Context) ([]templates.File, error) {
	files, err := d.readFiles(ctx, nil)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(files, func(a, b templates.File) int { return strings.Compare(a.Path, b.Path) })
	return files, nil
}

// readFiles reads the folder's template files; those u knows unchanged
// come with the bytes u holds (u may be nil).
func (d *Source) readFiles(ctx context.Context, u *unchanged) ([]templates.File, error) {
	st, err := os.Stat(d.dir)
	if err != nil {
		return nil, d.missingFolder(err)
	}
	if !st.IsDir() {
		return nil, d.missingFolder(fmt.Errorf("%s is a file, not a folder", d.dir))
	}
	root, err := os.OpenRoot(d.dir)
	if err != nil {
		return nil, d.missingFolder(err)
	}
	defer root.Close()
	fsys := root.FS()
	top, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, d.missingFolder(err)
	}
	var files []templates.File
	for _, e := range top {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		name := e.Name()
		if templates.Hidden(name) {
			continue
		}
		if e.IsDir() {
			sub, err := fs.ReadDir(fsys, name)
			if err != nil {
				d.logger.Warn("cannot read template subfolder", "folder", filepath.Join(d.dir, name), "error", err)
				continue
			}
			for _, s := range sub {
				if !s.IsDir() && templates.IsLibraryFile(name+"/"+s.Name()) && !templates.Hidden(s.Name()) {
					if f, ok := d.readFile(root, name+"/"+s.Name(), u); ok {
						files = append(files, f)
					}
				}
			}
			continue
		}
		if templates.IsLibraryFile(name) {
			if f, ok := d.readFile(root, name, u); ok {
				files = append(files, f)
			}
		}
	}
	return files, nil
}

// readFile reads rel (slash-separated, relative to the folder) through
// root, checking the size before reading so an oversized file is never
// loaded whole. ok is false for things that are not regular files, and for
// links leading nowhere. A file u knows unchanged comes with u's bytes.
func (d *Source) readFile(root *os.Root, rel string, u *unchanged) (templates.File, bool) {
	f, err := d.open(root, rel)
	switch {
	case errors.Is(err, errOutside):
		return templates.File{Path: rel, Err: linkedOut(rel)}, true
	case errors.Is(err, fs.ErrNotExist):
		// A dangling link or a file removed since the listing.
		return templates.File{}, false
	case err != nil:
		return templates.File{Path: rel, Err: fmt.Errorf("read template file %s: %w", rel, err)}, true
	}
	defer f.Close()
	data, err := readRegular(f, rel, int64(d.maxSize()), u)
	switch {
	case errors.Is(err, errNotRegular):
		return templates.File{}, false
	case fault.As(err) != nil:
		return templates.File{Path: rel, Err: err}, true
	case err != nil:
		return templates.File{Path: rel, Err: fmt.Errorf("read template file %s: %w", rel, err)}, true
	}
	return templates.File{Path: rel, Data: data}, true
}

// linkedOut is the refusal of a template file that is a symbolic link
// leading out of the folder. Its content is never read, so the error says
// nothing of it.
func linkedOut(rel string) *fault.Error {
	return &fault.Error{
		Code:    fault.InvalidTemplate,
		What:    fmt.Sprintf("template file %s is refused", rel),
		Why:     "it is a symbolic link leading out of the template folder, and only files inside the folder are served",
		How:     "copy the template into the folder, or point the link at a file inside the folder",
		Details: map[string]any{"file": rel},
		Err:     errOutside,
	}
}

// Watch watches the folder and calls onChange with each new catalog until
// ctx ends, then returns nil. Events are debounced; onChange runs only when
// the catalog's contents changed (a template's digest, or the set of files
// reported invalid), never for a save that changed nothing. When the folder
// is deleted the last catalog stays in service and the folder is polled
// until it comes back.
//
// No change made after Watch is called is missed, not even one made before
// its watches are in place: once they are, it loads the folder again and
// delivers what changed since the last catalog (Load's, or the last it
// delivered). So a caller may change the folder as soon as it has started
// Watch, without waiting for it.
func (d *Source) Watch(ctx context.Context, onChange func(*templates.Catalog)) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch template folder %s: %w", d.dir, err)
	}
	defer w.Close()

	d.mu.Lock()
	lastFP := fingerprint(d.last)
	d.mu.Unlock()

	failing := false
	rebuild := func() {
		d.mu.Lock()
		c, err := d.loadLocked(ctx)
		d.mu.Unlock()
		delivered := false
		switch {
		case err != nil && ctx.Err() != nil:
			return
		case err != nil:
			if !failing {
				d.logger.Warn("template folder unavailable; still serving the last catalog", "folder", d.dir, "error", err)
			}
			failing = true
		default:
			if failing {
				d.logger.Info("template folder is back", "folder", d.dir)
			}
			failing = false
			if fp := fingerprint(c); fp != lastFP {
				lastFP = fp
				delivered = true
				onChange(c)
			}
		}
		if d.afterRebuild != nil {
			d.afterRebuild(c, delivered, err)
		}
	}

	watching := d.addWatches(w) == nil
	poll := time.NewTicker(d.poll)
	defer poll.Stop()
	debounce := time.NewTimer(d.debounce)
	debounce.Stop()

	// Catch up with anything that changed before the watches were in
	// place (the contract above): later changes are events.
	rebuild()

	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if ev.Op == fsnotify.Chmod {
				continue
			}
			if filepath.Clean(ev.Name) == filepath.Clean(d.dir) && ev.Op.Has(fsnotify.Remove|fsnotify.Rename) {
				watching = false
			}
			if ev.Op.Has(fsnotify.Create) && filepath.Dir(ev.Name) == filepath.Clean(d.dir) && !templates.Hidden(filepath.Base(ev.Name)) {
				if st, err := os.Stat(ev.Name); err == nil && st.IsDir() {
					if err := w.Add(ev.Name); err != nil {
						d.logger.Warn("cannot watch template subfolder", "folder", ev.Name, "error", err)
					}
				}
			}
			debounce.Reset(d.debounce)
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			d.logger.Warn("template folder watch error", "folder", d.dir, "error", err)
			// Overflowed events may have hidden a change.
			debounce.Reset(d.debounce)
		case <-debounce.C:
			rebuild()
		case <-poll.C:
			if watching {
				// Inotify drops the watch when the folder goes; a
				// rename of the folder sends no event for it.
				if _, err := os.Stat(d.dir); err != nil {
					watching = false
					rebuild()
				}
				continue
			}
			if err := d.addWatches(w); err == nil {
				watching = true
				rebuild()
			}
		}
	}
}

// addWatches watches the folder and its direct, visible subfolders.
func (d *Source) addWatches(w *fsnotify.Watcher) error {
	for _, p := range w.WatchList() {
		_ = w.Remove(p)
	}
	if err := w.Add(d.dir); err != nil {
		return err
	}
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() && !templates.Hidden(e.Name()) {
			if err := w.Add(filepath.Join(d.dir, e.Name())); err != nil {
				d.logger.Warn("cannot watch template subfolder", "folder", filepath.Join(d.dir, e.Name()), "error", err)
			}
		}
	}
	return nil
}

// fingerprint summarises what a catalog serves and reports, so the watcher
// can tell a real change from a save that changed nothing.
func fingerprint(c *templates.Catalog) string {
	if c == nil {
		return ""
	}
	var b strings.Builder
	for _, e := range c.Templates() {
		b.WriteString(e.Path)
		b.WriteByte(0)
		b.WriteString(e.Digest)
		// A partial's change changes the templates that include it.
		b.WriteString(e.PartialsDigest)
		b.WriteByte('\n')
	}
	// Flows are served as prompts too: a change to a flow file alone must
	// reach the listeners.
	for _, f := range c.Flows() {
		b.WriteString("~")
		b.WriteString(f.Path)
		b.WriteByte(0)
		b.WriteString(f.Digest)
		b.WriteByte('\n')
	}
	for _, inv := range c.Invalid() {
		b.WriteString("!")
		b.WriteString(inv.Path)
		b.WriteByte(0)
		if inv.Kept {
			b.WriteString("kept")
		}
		b.WriteByte(0)
		if inv.Err != nil {
			b.WriteString(inv.Err.Error())
		}
		b.WriteByte('\n')
	}
	return "v1\n" + b.String()
}

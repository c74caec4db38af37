package auth

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/fsnotify/fsnotify"
)

// PolicyFile is the policy of a file (--auth-policy), read at start and
// again when it changes: a bad version is refused and the previous policy
// kept. Its methods are safe for concurrent use.
type PolicyFile struct {
	path    string
	sources []string
	labels  []string
	log     *slog.Logger
	cur     atomic.Pointer[Policy]

	mu   sync.Mutex // serialises reloads; guards last
	last []byte     // the bytes cur was read from
}

// LoadPolicyFile reads and checks the policy file at path against
// sources, the namespaces the server serves, and labels, the labels its
// sources name; each reload is checked against them too. A nil logger
// discards.
func LoadPolicyFile(path string, sources, labels []string, logger *slog.Logger) (*PolicyFile, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	f := &PolicyFile{path: path, sources: sources, labels: labels, log: logger}
	data, err := f.read()
	if err != nil {
		return nil, err
	}
	p, err := f.parse(data)
	if err != nil {
		return nil, err
	}
	f.cur.Store(p)
	f.last = data
	return f, nil
}

// Policy is the policy in force.
func (f *PolicyFile) Policy() *Policy { return f.cur.Load() }

// Path is the file's path.
func (f *PolicyFile) Path() string { return f.path }

// read reads the file, up to a byte past the bound so that ParsePolicy
// refuses a file that is too large without the whole of it in memory.
func (f *PolicyFile) read() ([]byte, error) {
	file, err := os.Open(f.path)
	if err != nil {
		return nil, fmt.Errorf("policy file %s: %w; check --auth-policy (FLOWYPROMPT_AUTH_POLICY)", f.path, err)
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, maxPolicyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("policy file %s: %w", f.path, err)
	}
	return data, nil
}

// parse parses the file's contents and checks its read rules' labels.
func (f *PolicyFile) parse(data []byte) (*Policy, error) {
	p, err := ParsePolicy(f.path, data, f.sources)
	if err != nil {
		return nil, err
	}
	for i, r := range p.Read {
		if r.Label != "" && !slices.Contains(f.labels, r.Label) {
			known := "this server's sources name no labels (labels=… on a GitHub --source)"
			if len(f.labels) > 0 {
				known = "the labels are " + strings.Join(f.labels, ", ")
			}
			return nil, fmt.Errorf("policy file %s: at /read/%d/label: unknown label %q: %s; name one of them, or remove the rule's label", f.path, i, r.Label, known)
		}
	}
	return p, nil
}

// Reload reads the file again. A file that did not change is not parsed
// again (changed is false); one that does not read or parse is refused
// with the error, and the policy in force kept.
func (f *PolicyFile) Reload() (changed bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	data, err := f.read()
	if err != nil {
		return false, err
	}
	if bytes.Equal(data, f.last) {
		return false, nil
	}
	p, err := f.parse(data)
	if err != nil {
		return false, err
	}
	f.cur.Store(p)
	f.last = data
	return true, nil
}

// Watch reloads the file whenever it changes (watched through its folder,
// so an editor's or a deployment's replacing it counts too) and whenever
// hup delivers (SIGHUP), until ctx ends; changed is called with each new
// policy. A reload that fails is logged and the policy in force kept.
// It returns an error only when the file cannot be watched; then SIGHUP
// still reloads.
func (f *PolicyFile) Watch(ctx context.Context, hup <-chan os.Signal, changed func(*Policy)) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		go f.serve(ctx, hup, nil, changed)
		return fmt.Errorf("watch the policy file %s: %w; SIGHUP reloads it", f.path, err)
	}
	if err := w.Add(filepath.Dir(f.path)); err != nil {
		_ = w.Close()
		go f.serve(ctx, hup, nil, changed)
		return fmt.Errorf("watch the policy file %s: %w; SIGHUP reloads it", f.path, err)
	}
	go func() {
		defer w.Close()
		f.serve(ctx, hup, w, changed)
	}()
	return nil
}

func (f *PolicyFile) serve(ctx context.Context, hup <-chan os.Signal, w *fsnotify.Watcher, changed func(*Policy)) {
	var events <-chan fsnotify.Event
	var errs <-chan error
	if w != nil {
		events, errs = w.Events, w.Errors
	}
	base := filepath.Base(f.path)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			f.reload("SIGHUP", changed)
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			// Another file of the folder may be what the policy's path
			// links to (a Kubernetes ConfigMap swaps a ..data link): any
			// change but a chmod reads the file again, which costs nothing
			// when its bytes stayed the same.
			if ev.Op == fsnotify.Chmod || (filepath.Base(ev.Name) != base && ev.Op&(fsnotify.Create|fsnotify.Rename) == 0) {
				continue
			}
			f.reload("file change", changed)
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			f.log.Warn("watching the policy file failed; SIGHUP still reloads it", "file", f.path, "err", err)
		}
	}
}

func (f *PolicyFile) reload(why string, changed func(*Policy)) {
	ok, err := f.Reload()
	switch {
	case err != nil:
		f.log.Error("the policy file was not reloaded: the previous policy stays in force", "trigger", why, "err", err,
			"how", "fix the file; it is read again when it changes or on SIGHUP")
	case ok:
		f.log.Info("access policy reloaded", "trigger", why, "file", f.path)
		if changed != nil {
			changed(f.cur.Load())
		}
	}
}

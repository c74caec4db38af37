package preview

import (
	"sync"

	"github.com/flowyprompt/flowyprompt/templates"
)

// follows are the listeners a Handler added to libraries: on the
// Library's changes, on the labels' opening, and on the changes of each
// label's library as it opens. The Handler owns them all and removes them
// at Close; a listener added after that (a label opened while Close ran)
// is removed at once.
type follows struct {
	mu      sync.Mutex
	stopped bool
	remove  []func()
}

// keep keeps remove, which removes a listener, for stop; it calls it at
// once when the follows are stopped already. It holds no lock while a
// listener is added or removed elsewhere: Labels.Opened calls its
// function, which adds a listener, within the call.
func (f *follows) keep(remove func()) {
	f.mu.Lock()
	if !f.stopped {
		f.remove = append(f.remove, remove)
		f.mu.Unlock()
		return
	}
	f.mu.Unlock()
	remove()
}

// stop removes every listener kept, the last added first, and every one
// kept from now on.
func (f *follows) stop() {
	f.mu.Lock()
	f.stopped = true
	remove := f.remove
	f.remove = nil
	f.mu.Unlock()
	for i := len(remove) - 1; i >= 0; i-- {
		remove[i]()
	}
}

// follow makes the changes of the Library, and of each label's library
// from the moment it is opened (on a page's first request for it, or a
// client's), reach the event streams showing that label.
func (h *Handler) follow() {
	def := ""
	if h.opts.Labels != nil {
		def = h.opts.Labels.Names()[0]
	}
	h.followLibrary(def, h.opts.Library)
	if h.opts.Labels == nil {
		return
	}
	h.follows.keep(h.opts.Labels.Opened(func(name string, lib *templates.Library) {
		if lib == h.opts.Library {
			return // followed above
		}
		h.followLibrary(name, lib)
	}))
}

// followLibrary tells the streams showing label each change of lib.
func (h *Handler) followLibrary(label string, lib *templates.Library) {
	h.log.Debug("preview page follows a library", "label", label)
	h.follows.keep(lib.OnChange(func(_, _ *templates.Catalog, _ templates.Changes) { h.changed(label) }))
}

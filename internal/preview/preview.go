// Package preview is the page authors keep open while they write
// templates: the library's templates and flows, each file's validation
// problems, a form built from a template's variables with the prompt it
// renders as the author types, the template's tests and their results,
// all updated as soon as the library changes.
//
// A Handler serves the page (plain HTML, CSS and a small script embedded
// in the binary: nothing is fetched from elsewhere, so it works offline)
// and the JSON it reads, all read-only: api/library lists the library,
// api/template?name= details one template, api/render (POST) renders one
// with the form's values through the code prompts/get renders with
// (testrun.Text), and api/events is an event stream that says when the
// library changed (templates.Library.OnChange). When the sources name
// labels, each request names the label it shows (?label=, the one a
// request naming none is served when absent), and the page follows the
// library of every label as it is opened (follow.go). `flowyprompt preview`
// serves it on loopback; `serve --transport http --ui` mounts it at /ui/
// behind the server's guard. The handler checks neither Host nor Origin
// nor credentials itself: whoever mounts it puts it behind those.
//
// Template text reaches the page only as JSON, which the script puts in
// the document as text (textContent), never as markup; the page's one
// HTML document is written by html/template, and every answer carries a
// Content-Security-Policy that lets the page load only its own files.
package preview

import (
	"context"
	"embed"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/flowyprompt/flowyprompt/templates"
)

// Defaults of Options.
const (
	// DefaultMaxBodyBytes caps a render request's body: a form's values.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultMaxStreams caps the event streams open at once.
	DefaultMaxStreams = 64
	// DefaultKeepAlive is the interval of keep-alive comments on an event
	// stream, so that proxies do not close one that has been quiet.
	DefaultKeepAlive = 15 * time.Second
)

// contentSecurityPolicy lets the page load its own script, style and
// JSON and nothing else: no inline script (template text that got into
// the document as markup could not run), no frames, no form posts.
const contentSecurityPolicy = "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; object-src 'none'"

// Options configure a Handler.
type Options struct {
	// Library is the library shown (with labels, the default label's);
	// its changes are pushed to the page. Required.
	Library *templates.Library
	// Labels, when set, are the labels the sources name, the Library
	// being the first's: the page follows each label's library from the
	// moment it is opened, and offers the labels as a choice.
	Labels Labels
	// View is what a request may see of the library at label ("": the
	// label a request naming none is served): the catalog (a member's
	// part, under a policy), the label's name ("" without labels), or
	// why the label cannot be shown (UNKNOWN_LABEL). app.App.PageView is
	// it. Required.
	View func(ctx context.Context, label string) (*templates.Catalog, string, error)
	// Version is shown in the page's footer.
	Version string
	// MaxBodyBytes caps a render request's body (default
	// DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// MaxStreams caps the event streams open at once (default
	// DefaultMaxStreams); more are refused with 503.
	MaxStreams int
	// KeepAlive is the interval of keep-alive comments on event streams
	// (default DefaultKeepAlive).
	KeepAlive time.Duration
	Logger    *slog.Logger
}

// Handler serves the page and its API. Close it to end its event streams
// and stop listening to the library.
type Handler struct {
	opts Options
	log  *slog.Logger
	mux  *http.ServeMux

	mu      sync.Mutex
	streams map[*stream]struct{}
	closed  bool
	done    chan struct{}

	// follows are the libraries the page follows (follow.go).
	follows follows
}

//go:embed page
var pageFiles embed.FS

// index is the page's one HTML document.
var index = template.Must(template.ParseFS(pageFiles, "page/index.html"))

// Labels are the labels a server serves, each a library: labelset.Set
// implements it (app.Labels is the same contract).
type Labels interface {
	// Names lists the labels, the default first.
	Names() []string
	// Opened calls fn with the library of each label as it is opened, and
	// at once with those open already; fn must be quick. stop ends the
	// calls; one already under way may still complete.
	Opened(fn func(label string, lib *templates.Library)) (stop func())
}

// New returns the handler of opts.Library's page. It follows the
// library, and each label's, until Close.
func New(opts Options) *Handler {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.MaxStreams <= 0 {
		opts.MaxStreams = DefaultMaxStreams
	}
	if opts.KeepAlive <= 0 {
		opts.KeepAlive = DefaultKeepAlive
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Library == nil || opts.View == nil {
		panic("preview: Options.Library and Options.View are required")
	}
	files, _ := fs.Sub(pageFiles, "page")
	h := &Handler{opts: opts, log: opts.Logger, streams: map[*stream]struct{}{}, done: make(chan struct{})}
	h.follow()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", h.serveIndex)
	static := http.FileServerFS(files)
	mux.Handle("GET /app.js", static)
	mux.Handle("GET /style.css", static)
	mux.HandleFunc("GET /api/library", h.serveLibrary)
	mux.HandleFunc("GET /api/template", h.serveTemplate)
	mux.HandleFunc("POST /api/render", h.serveRender)
	mux.HandleFunc("GET /api/events", h.serveEvents)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, problem{Code: "NOT_FOUND", Message: "no page or endpoint at " + r.URL.Path,
			How: "open the page at its root: / of flowyprompt preview, /ui/ of serve --ui"})
	})
	h.mux = mux
	return h
}

// ServeHTTP serves the page, its files and its API, each answer with the
// page's security headers.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", contentSecurityPolicy)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cache-Control", "no-store")
	h.mux.ServeHTTP(w, r)
}

// Close ends the event streams and stops following the libraries: it
// removes every listener New and the labels' opening added. The page's
// other requests are still answered.
func (h *Handler) Close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	close(h.done)
	h.mu.Unlock()
	h.follows.stop()
}

func (h *Handler) serveIndex(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := index.Execute(w, struct{ Version string }{h.opts.Version}); err != nil {
		h.log.Debug("preview page not written", "err", err)
	}
}

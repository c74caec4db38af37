package preview

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"unicode/utf8"

	"github.com/flowyprompt/flowyprompt/internal/testrun"
	"github.com/flowyprompt/flowyprompt/render"
	"github.com/flowyprompt/flowyprompt/templates"
)

// Bounds of a render request, besides the body's size.
const (
	maxNameBytes = 512
	maxArguments = 256
)

// renderRequest is api/render's body: the template and the form's values,
// each in the string form prompts/get's arguments take.
type renderRequest struct {
	Name      string            `json:"name"`
	Arguments map[string]string `json:"arguments"`
}

// rendered is api/render's answer: the prompt as prompts/get renders it
// (a conversation as its transcript), or why it does not render.
type rendered struct {
	Text  string   `json:"text"`
	Error *problem `json:"error,omitempty"`
	// Unknown are arguments that name no variable: ignored.
	Unknown []string `json:"unknown"`
}

// serveRender renders a template of the label the request names
// (?label=, as api/library).
func (h *Handler) serveRender(w http.ResponseWriter, r *http.Request) {
	// A page of another site can post a form's body without asking first
	// (a "simple" request), not a JSON one: that needs a CORS preflight,
	// which only the origins the mounter allows pass.
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		writeError(w, http.StatusUnsupportedMediaType, problem{Code: "INVALID_REQUEST", Message: "the body is not JSON",
			How: `post {"name": NAME, "arguments": {...}} with Content-Type: application/json`})
		return
	}
	body := http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	var req renderRequest
	if err := dec.Decode(&req); err != nil {
		status, msg := http.StatusBadRequest, "the body is not a render request: "+err.Error()
		if mb := (*http.MaxBytesError)(nil); errors.As(err, &mb) {
			status, msg = http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is over %d bytes", mb.Limit)
		}
		writeError(w, status, problem{Code: "INVALID_REQUEST", Message: msg,
			How: `post {"name": NAME, "arguments": {"variable": "value"}}, values as strings`})
		return
	}
	if p := checkName(req.Name); p != nil {
		writeError(w, http.StatusBadRequest, *p)
		return
	}
	if len(req.Arguments) > maxArguments {
		writeError(w, http.StatusBadRequest, problem{Code: "INVALID_REQUEST",
			Message: fmt.Sprintf("%d arguments, over the %d a render takes", len(req.Arguments), maxArguments),
			How:     "send the template's variables only"})
		return
	}
	cat, _, ok := h.view(w, r)
	if !ok {
		return
	}
	e, found := cat.Lookup(req.Name)
	if !found {
		writeFault(w, http.StatusNotFound, templates.NotFound(req.Name, cat))
		return
	}
	out := rendered{Unknown: render.Unknown(e.Template, req.Arguments)}
	if out.Unknown == nil {
		out.Unknown = []string{}
	}
	// The code prompts/get renders with: what the author sees is what a
	// client gets.
	text, err := testrun.Text(e.Template, req.Arguments)
	if err != nil {
		p := problemOf(err)
		out.Error = &p
	}
	out.Text = text
	writeJSON(w, http.StatusOK, out)
}

// checkName refuses a name no template can have before any lookup.
func checkName(name string) *problem {
	switch {
	case name == "":
		return &problem{Code: "INVALID_REQUEST", Message: "no template name", How: "name a template of the library"}
	case len(name) > maxNameBytes || !utf8.ValidString(name):
		return &problem{Code: "INVALID_REQUEST", Message: fmt.Sprintf("the name is not a template name (over %d bytes, or not UTF-8)", maxNameBytes),
			How: "name a template of the library"}
	}
	return nil
}

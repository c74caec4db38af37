package preview

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/internal/testrun"
	"github.com/flowyprompt/flowyprompt/templates"
)

// library is api/library's answer: what the page's list shows.
type library struct {
	// Label is the label shown, by name, and Labels those the page
	// offers, the default first; both absent when the sources name no
	// labels.
	Label     string               `json:"label,omitempty"`
	Labels    []string             `json:"labels,omitempty"`
	Source    templates.SourceInfo `json:"source"`
	Templates []summary            `json:"templates"`
	Flows     []flow               `json:"flows"`
	Invalid   []invalid            `json:"invalid"`
	Conflicts []templates.Conflict `json:"conflicts"`
}

// summary is one template in the list.
type summary struct {
	Name string `json:"name"`
	// Namespace is the source it comes from when the library has
	// several ("" with one).
	Namespace   string `json:"namespace,omitempty"`
	Description string `json:"description"`
	Version     string `json:"version,omitempty"`
	Path        string `json:"path"`
	Warnings    int    `json:"warnings"`
	Tests       int    `json:"tests"`
}

// flow is one flow in the list.
type flow struct {
	Name        string              `json:"name"`
	Namespace   string              `json:"namespace,omitempty"`
	Description string              `json:"description"`
	Path        string              `json:"path"`
	Steps       []string            `json:"steps"`
	Arguments   []templates.FlowArg `json:"arguments"`
}

// invalid is a file the library left out, with its validation report's
// problems, as `flowyprompt validate` lists them: each a JSON pointer
// ("" for the whole file) and what is wrong there, which says what the
// field must be.
type invalid struct {
	Path     string              `json:"path"`
	Code     string              `json:"code"`
	Message  string              `json:"message"`
	Problems []templates.Problem `json:"problems"`
	// Kept: the file's last valid version is still served.
	Kept bool `json:"kept,omitempty"`
}

// detail is api/template's answer: what the form and the tests show.
type detail struct {
	summary
	Conversation bool       `json:"conversation"`
	Variables    []variable `json:"variables"`
	Warnings     []string   `json:"warnings"`
	Tests        []result   `json:"tests"`
}

// variable is one field of the form.
type variable struct {
	templates.Variable
	// Value is what the field starts with: the default, else the first
	// example, else nothing.
	Value string `json:"value"`
}

// result is one test's outcome.
type result struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

// view is what r may see of the label it names (?label=; none: the label
// a request naming none is served), through Options.View: the catalog
// and the label's name. A label that cannot be shown is answered with
// Options.View's error (UNKNOWN_LABEL: the one prompts/get gives) and
// the labels there are, and ok is false.
func (h *Handler) view(w http.ResponseWriter, r *http.Request) (cat *templates.Catalog, label string, ok bool) {
	name := r.URL.Query().Get("label")
	if len(name) > maxNameBytes || !utf8.ValidString(name) {
		writeError(w, http.StatusBadRequest, problem{Code: "INVALID_REQUEST",
			Message: fmt.Sprintf("the label is not a label's name (over %d bytes, or not UTF-8)", maxNameBytes),
			How:     "name one of the labels the page offers, or leave ?label= out"})
		return nil, "", false
	}
	cat, label, err := h.opts.View(r.Context(), name)
	if err != nil {
		status := http.StatusServiceUnavailable // the label's library did not load
		switch fault.CodeOf(err) {
		case fault.UnknownLabel:
			status = http.StatusBadRequest
		case fault.PermissionDenied:
			status = http.StatusForbidden
		}
		writeJSON(w, status, failure{Error: problemOf(err), Labels: h.labels()})
		return nil, "", false
	}
	return cat, label, true
}

// labels are the labels the page offers, the default first; nil without.
func (h *Handler) labels() []string {
	if h.opts.Labels == nil {
		return nil
	}
	return h.opts.Labels.Names()
}

func (h *Handler) serveLibrary(w http.ResponseWriter, r *http.Request) {
	cat, label, ok := h.view(w, r)
	if !ok {
		return
	}
	several := len(cat.Info().Members) > 0
	out := library{Label: label, Labels: h.labels(), Source: cat.Info(), Templates: []summary{}, Flows: []flow{}, Invalid: []invalid{},
		Conflicts: cat.Conflicts()}
	if out.Conflicts == nil {
		out.Conflicts = []templates.Conflict{}
	}
	for _, e := range cat.Templates() {
		out.Templates = append(out.Templates, summaryOf(e, several))
	}
	for _, fe := range cat.Flows() {
		f := flow{Name: fe.Flow.Name, Namespace: namespaceOf(fe.Flow.Name, several), Description: fe.Flow.Description,
			Path: fe.Path, Steps: []string{}, Arguments: fe.Flow.Arguments}
		if f.Arguments == nil {
			f.Arguments = []templates.FlowArg{}
		}
		for _, s := range fe.Flow.Steps {
			f.Steps = append(f.Steps, s.Template)
		}
		out.Flows = append(out.Flows, f)
	}
	for _, inv := range cat.Invalid() {
		out.Invalid = append(out.Invalid, invalidOf(inv))
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *Handler) serveTemplate(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("name")
	if err := checkName(name); err != nil {
		writeError(w, http.StatusBadRequest, *err)
		return
	}
	cat, _, ok := h.view(w, r)
	if !ok {
		return
	}
	e, found := cat.Lookup(name)
	if !found {
		writeFault(w, http.StatusNotFound, templates.NotFound(name, cat))
		return
	}
	t := e.Template
	d := detail{summary: summaryOf(e, len(cat.Info().Members) > 0), Conversation: len(t.Messages) > 0,
		Variables: []variable{}, Warnings: []string{}, Tests: []result{}}
	for _, v := range t.Variables {
		fv := variable{Variable: v}
		switch {
		case v.Default != nil:
			fv.Value = *v.Default
		case len(v.Examples) > 0:
			fv.Value = v.Examples[0]
		}
		d.Variables = append(d.Variables, fv)
	}
	for _, wn := range e.Warnings {
		d.Warnings = append(d.Warnings, wn.String())
	}
	for _, res := range testrun.Run(t) {
		d.Tests = append(d.Tests, result{Name: res.Test, Status: string(res.Status), Reason: res.Reason})
	}
	writeJSON(w, http.StatusOK, d)
}

func summaryOf(e *templates.Entry, several bool) summary {
	m := e.Template.Metadata
	return summary{Name: m.Name, Namespace: namespaceOf(m.Name, several), Description: m.Description, Version: m.Version,
		Path: e.Path, Warnings: len(e.Warnings), Tests: len(e.Template.Tests)}
}

// namespaceOf is the namespace of a name in a library of several
// sources, whose names are NAMESPACE/NAME.
func namespaceOf(name string, several bool) string {
	if !several {
		return ""
	}
	ns, _, _ := strings.Cut(name, templates.NamespaceSeparator)
	return ns
}

// invalidOf reports inv as `flowyprompt validate` does: the problems the
// error names, else the error as the one problem of the whole file.
func invalidOf(inv templates.Invalid) invalid {
	out := invalid{Path: inv.Path, Code: fault.CodeOf(inv.Err), Message: inv.Err.Error(), Problems: templates.Problems(inv.Err), Kept: inv.Kept}
	if len(out.Problems) == 0 {
		out.Problems = []templates.Problem{templates.FaultProblem(inv.Err)}
	}
	return out
}

// problem is an error answer: what went wrong and how to fix it.
type problem struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Why     string `json:"why,omitempty"`
	How     string `json:"how,omitempty"`
}

// problemOf is err as the page shows it: its code, what failed, why and
// how to fix it.
func problemOf(err error) problem {
	p := problem{Code: fault.CodeOf(err), Message: err.Error()}
	if f := fault.As(err); f != nil && f.What != "" {
		p.Message, p.Why, p.How = f.What, f.Why, f.How
	}
	return p
}

func writeFault(w http.ResponseWriter, status int, err error) {
	writeError(w, status, problemOf(err))
}

// failure is an error answer: the problem and, when a label could not
// be shown, the labels there are, for the page to offer.
type failure struct {
	Error  problem  `json:"error"`
	Labels []string `json:"labels,omitempty"`
}

func writeError(w http.ResponseWriter, status int, p problem) {
	writeJSON(w, status, failure{Error: p})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	// The script reads the answer as data: escaping <, > and & keeps it
	// inert should anything read it as markup anyway.
	enc.SetEscapeHTML(true)
	_ = enc.Encode(v)
}

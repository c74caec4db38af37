package app

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/internal/label"

	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
)

// A view is what one request sees of the library: the library it is
// served from and the catalog of it that it may read. Handlers read the
// library through viewOf alone, so what a request may see is decided in
// one place.
type view struct {
	lib *templates.Library
	cat *templates.Catalog
	// label is the label lib serves, by name (the default's when the
	// request named none); "" when the server has no labels.
	label string
}

// source is the source of the view's library (versions, files).
func (v view) source() templates.Source { return v.lib.Source() }

// viewOf returns the view of the request r, which ctx runs: the library
// of the label it asks for (labelOf, libraryFor), as much of it as its
// caller may see (visible).
func (a *App) viewOf(ctx context.Context, r *mcp.Request) (view, error) {
	return a.labelView(ctx, a.labelOf(ctx, r))
}

// labelView is the view of the library at label ("": the default), as
// much of it as ctx's caller may see: for a request that names a label
// of its own, such as the diff tool's from and to.
func (a *App) labelView(ctx context.Context, label string) (view, error) {
	lib, err := a.libraryFor(ctx, label)
	if err != nil {
		return view{}, err
	}
	v := a.visible(ctx, lib)
	if a.opts.Labels != nil {
		if label == "" {
			label = a.labels[0]
		}
		v.label = label
	}
	return v, nil
}

// labelOf is the label r asks for, "" for the default. r is nil for a
// 2025 session's notifications, ctx then being its opener's. In this
// order: the request's _meta (label.MetaKey; a value that is not a
// string is passed on as written, for libraryFor to refuse), the HTTP
// request's Flowyprompt-Label header (label.FromHeader: the POST's, or
// the opening request's for a session's notifications), the member's
// policy (labelByPolicy), the server's --label.
func (a *App) labelOf(ctx context.Context, r *mcp.Request) string {
	if r != nil {
		if raw := r.Meta(label.MetaKey); len(raw) > 0 && string(raw) != "null" {
			var s string
			if json.Unmarshal(raw, &s) != nil {
				return string(raw)
			}
			if s != "" {
				return s
			}
		}
	}
	if h := label.FromHeader(ctx); h != "" {
		return h
	}
	if p := a.labelByPolicy(ctx); p != "" {
		return p
	}
	return a.opts.Label
}

// libraryFor is the library serving label: the app's own for the default
// ("" or the first of Labels.Names), else the label's, which Labels opens
// on its first use. A label no source names is refused with the labels
// there are, never served the default instead.
func (a *App) libraryFor(ctx context.Context, name string) (*templates.Library, error) {
	if name == "" {
		return a.lib, nil
	}
	if a.opts.Labels == nil {
		return nil, &fault.Error{Code: fault.UnknownLabel, What: fmt.Sprintf("unknown label %.64q", name),
			Why: "this server's sources name no labels", How: "leave the label out to be served the default"}
	}
	names := a.labels
	switch {
	case name == names[0]:
		return a.lib, nil
	case !slices.Contains(names, name):
		return nil, &fault.Error{Code: fault.UnknownLabel, What: fmt.Sprintf("unknown label %.64q", name),
			Why:         "the labels of this server are " + strings.Join(names, ", "),
			How:         fmt.Sprintf("name one of them in _meta[%q] or the %s header, or leave the label out to be served %s", label.MetaKey, label.Header, names[0]),
			Suggestions: closeNames(name, names), Details: map[string]any{"labels": names}}
	}
	return a.opts.Labels.Library(ctx, name)
}

// visible is as much of lib as ctx's caller may see: under an access
// policy, the sources their read rules name (access.go), the others left
// out as if they were not configured.
func (a *App) visible(ctx context.Context, lib *templates.Library) view {
	cat := lib.Catalog()
	if sources, all := a.readable(ctx); !all {
		cat = a.only(cat, sources)
	}
	return view{lib: lib, cat: cat}
}

// lookup finds the template called name in v's catalog, or answers
// TEMPLATE_NOT_FOUND with the names nearest to it.
func (v view) lookup(name string) (*templates.Entry, error) {
	e, ok := v.cat.Lookup(name)
	if !ok {
		return nil, templates.NotFound(name, v.cat)
	}
	return e, nil
}

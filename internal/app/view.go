package app

import (
	"context"
	"fmt"

	"github.com/flowyprompt/flowyprompt/internal/fault"

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
	return a.visible(ctx, lib)
}

// labelOf is the label r asks for, "" for the default.
func (a *App) labelOf(context.Context, *mcp.Request) string { return "" }

// libraryFor is the library serving label.
func (a *App) libraryFor(_ context.Context, label string) (*templates.Library, error) {
	if label != "" {
		return nil, &fault.Error{Code: fault.UnknownLabel, What: fmt.Sprintf("unknown label %q", label),
			Why: "this server's sources name no labels", How: "leave the label out to be served the default"}
	}
	return a.lib, nil
}

// visible is as much of lib as ctx's caller may see: under an access
// policy, the sources their read rules name (access.go), the others left
// out as if they were not configured.
func (a *App) visible(ctx context.Context, lib *templates.Library) (view, error) {
	cat := lib.Catalog()
	if sources, all := a.readable(ctx); !all {
		cat = a.only(cat, sources)
	}
	return view{lib: lib, cat: cat}, nil
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

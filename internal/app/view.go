package app

import (
	"context"

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

// viewOf returns the view of the request r, which ctx runs (nil r: a
// caller with no request, such as a greeting).
func (a *App) viewOf(ctx context.Context, r *mcp.Request) (view, error) {
	_, _ = ctx, r
	return view{lib: a.lib, cat: a.lib.Catalog()}, nil
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

package app

import (
	"context"

	"github.com/flowyprompt/flowyprompt/templates"
)

// Catalog is the catalog of the default label's library that the caller
// ctx carries (auth.MemberOf) may read: what the preview page at /ui/
// shows them. It is decided where every handler's is (viewOf).
func (a *App) Catalog(ctx context.Context) (*templates.Catalog, error) {
	v, err := a.viewOf(ctx, nil)
	if err != nil {
		return nil, err
	}
	return v.cat, nil
}

package app

import (
	"context"

	"github.com/flowyprompt/flowyprompt/templates"
)

// PageView is what the preview page (internal/preview) shows ctx's caller
// of the library at label: the catalog they may see, decided where every
// handler's is (labelView), and the label by name ("" when the server has
// no labels). label "" is the label a request naming none is served
// (labelOf: the Flowyprompt-Label header, the member's policy, --label).
// A label the server does not serve is refused with the UNKNOWN_LABEL
// error prompts/get gives, never served the default instead.
func (a *App) PageView(ctx context.Context, label string) (*templates.Catalog, string, error) {
	if label == "" {
		label = a.labelOf(ctx, nil)
	}
	v, err := a.labelView(ctx, label)
	if err != nil {
		return nil, "", err
	}
	return v.cat, v.label, nil
}

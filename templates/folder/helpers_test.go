package folder

import (
	"encoding/json"
	"log/slog"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/templates"
)

// tmpl returns a valid template file body named name whose only section is
// content.
func tmpl(name, content string) []byte {
	c, _ := json.Marshal(content)
	return []byte(`{"metadata":{"name":"` + name + `","description":"about ` + name + `","version":"1.0.0"},` +
		`"variables":[],"results":[{"name":"S","content":` + string(c) + `}]}`)
}

var quiet = slog.New(slog.DiscardHandler)

func names(es []*templates.Entry) []string {
	out := []string{}
	for _, e := range es {
		out = append(out, e.Template.Metadata.Name)
	}
	return out
}

type invalidRow struct {
	Path string
	Code string
	Kept bool
}

func invalidRows(c *templates.Catalog) []invalidRow {
	out := []invalidRow{}
	for _, inv := range c.Invalid() {
		out = append(out, invalidRow{inv.Path, fault.CodeOf(inv.Err), inv.Kept})
	}
	return out
}

package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
)

// TemplateURIPrefix names templates as resources: template://NAME is the
// template file's JSON.
const TemplateURIPrefix = "template://"

// ResourceReader is implemented by sources that can read other files of
// the same source (a template's `resources` may name a path).
type ResourceReader interface {
	ReadResource(ctx context.Context, path string) (data []byte, mimeType string, err error)
}

// ListResources lists every template as a resource, in name order.
func (a *App) ListResources(context.Context, *mcp.Request) ([]mcp.Resource, error) {
	entries := a.lib.Catalog().Templates()
	out := make([]mcp.Resource, 0, len(entries))
	for _, e := range entries {
		m := e.Template.Metadata
		out = append(out, mcp.Resource{URI: TemplateURIPrefix + m.Name, Name: m.Name, Title: title(m.Name),
			Description: m.Description, MimeType: "application/json", Size: int64(len(e.Raw))})
	}
	return out, nil
}

// ListResourceTemplates offers template://{name}.
func (a *App) ListResourceTemplates(context.Context, *mcp.Request) ([]mcp.ResourceTemplate, error) {
	return []mcp.ResourceTemplate{{URITemplate: TemplateURIPrefix + "{name}", Name: "template", Title: "Prompt template",
		Description: "A prompt template's JSON definition, by name (names from prompts/list or flowyprompt_list_templates).",
		MimeType:    "application/json"}}, nil
}

// ReadResource returns a template's JSON.
func (a *App) ReadResource(ctx context.Context, _ *mcp.Request, uri string) (*mcp.ReadResourceResult, error) {
	c, err := a.resourceContents(ctx, uri)
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{c}}, nil
}

func (a *App) resourceContents(ctx context.Context, uri string) (mcp.ResourceContents, error) {
	if name, ok := strings.CutPrefix(uri, TemplateURIPrefix); ok {
		cat := a.lib.Catalog()
		e, found := cat.Lookup(name)
		if !found {
			f := templates.NotFound(name, cat)
			f.Code = fault.ResourceNotFound
			return mcp.ResourceContents{}, f
		}
		return mcp.ResourceContents{URI: uri, MimeType: "application/json", Text: string(e.Raw)}, nil
	}
	if strings.Contains(uri, "://") {
		return mcp.ResourceContents{}, &fault.Error{Code: fault.ResourceNotFound, What: fmt.Sprintf("unknown resource %q", uri),
			Why: "this server serves template://NAME resources and files of its template source",
			How: "list them with resources/list"}
	}
	rr, ok := a.lib.Source().(ResourceReader)
	if !ok {
		return mcp.ResourceContents{}, &fault.Error{Code: fault.ResourceNotFound, What: fmt.Sprintf("cannot read %q", uri),
			Why: "this template source cannot serve files other than templates", How: "use template://NAME resources"}
	}
	data, mime, err := rr.ReadResource(ctx, uri)
	if err != nil {
		return mcp.ResourceContents{}, err
	}
	return mcp.ResourceContents{URI: uri, MimeType: mime, Text: string(data)}, nil
}

// embeddedResources turns a template's `resources` into prompt messages
// that follow the text (seed 001: embedded resource context).
func (a *App) embeddedResources(ctx context.Context, t *templates.Template) ([]mcp.PromptMessage, error) {
	msgs := make([]mcp.PromptMessage, 0, len(t.Resources))
	for _, uri := range t.Resources {
		c, err := a.resourceContents(ctx, uri)
		if err != nil {
			return nil, fmt.Errorf("resource %q of template %s: %w", uri, t.Metadata.Name, err)
		}
		msgs = append(msgs, mcp.PromptMessage{Role: "user", Content: mcp.Content{Type: "resource", Resource: &c}})
	}
	return msgs, nil
}

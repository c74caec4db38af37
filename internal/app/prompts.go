package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/flowyprompt/flowyprompt/internal/audit"
	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/render"
	"github.com/flowyprompt/flowyprompt/templates"
)

// ListPrompts lists one prompt per valid template, in name order. The list
// is built once per catalog.
func (a *App) ListPrompts(ctx context.Context, r *mcp.Request) ([]mcp.Prompt, error) {
	v, err := a.viewOf(ctx, r)
	if err != nil {
		return nil, err
	}
	cat := v.cat
	return a.prompts.get(cat, func() []mcp.Prompt {
		entries := cat.Templates()
		ps := make([]mcp.Prompt, 0, len(entries))
		for _, e := range entries {
			ps = append(ps, promptOf(e.Template))
		}
		for _, fe := range cat.Flows() {
			ps = append(ps, flowPromptOf(fe.Flow))
		}
		return ps
	}), nil
}

func promptOf(t *templates.Template) mcp.Prompt {
	args := make([]mcp.PromptArgument, 0, len(t.Variables))
	for _, v := range t.Variables {
		args = append(args, mcp.PromptArgument{Name: v.Name, Description: argumentDescription(v), Required: v.Required})
	}
	return mcp.Prompt{Name: t.Metadata.Name, Title: templateTitle(t), Description: t.Metadata.Description, Arguments: args,
		Meta: modelMeta(t)}
}

// argumentDescription adds the default and allowed values, since the
// prompt argument form of most clients shows nothing but the description.
// A typed variable's description says how its value is written, since a
// prompt argument is a string whatever the variable's type.
func argumentDescription(v templates.Variable) string {
	form, example := templates.TypeForm(v.Type)
	if len(v.Enum) == 0 && (v.Default == nil || *v.Default == "") && form == "" {
		return v.Description // shared, not copied: the list is kept per catalog
	}
	var b strings.Builder
	b.WriteString(v.Description)
	if form != "" {
		fmt.Fprintf(&b, " (%s: %s, e.g. %s)", v.Type, form, example)
	}
	if len(v.Enum) > 0 {
		fmt.Fprintf(&b, " (one of: %s)", strings.Join(v.Enum, ", "))
	}
	if v.Default != nil && *v.Default != "" {
		fmt.Fprintf(&b, " (default: %s)", *v.Default)
	}
	return b.String()
}

// GetPrompt renders a template as one user message, or a conversation
// template as its messages (promptMessages).
func (a *App) GetPrompt(ctx context.Context, r *mcp.Request, p *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	v, err := a.viewOf(ctx, r)
	if err != nil {
		return nil, err
	}
	cat := v.cat
	e, ok := cat.Lookup(p.Name)
	if !ok {
		if name, isFlow := strings.CutPrefix(p.Name, flowPromptPrefix); isFlow {
			if fe, ok := cat.LookupFlow(name); ok {
				res, err := a.flowPrompt(ctx, r, cat, fe.Flow, p)
				if res != nil {
					res.Meta = servedMeta(v, fe.Flow.Name, res.Meta)
				}
				return res, err
			}
		}
		return nil, templates.NotFound(p.Name, cat)
	}
	noteUsage(ctx, e, cat)
	msgs, err := promptMessages(e.Template, p.Arguments)
	if f := fault.As(err); f != nil && f.Code == fault.MissingRequiredVariable && r != nil && r.Modern() {
		// A modern client that can show a form is asked for what is
		// missing (a 2025 session's prompts/get is not: the render tool
		// asks there).
		missing, _ := f.Details["missing"].([]string)
		merged, askErr := a.askForMissing(ctx, r, e.Template, p.Arguments, missing, p.Retry)
		switch {
		case askErr != nil:
			return nil, askErr
		case merged != nil:
			p.Arguments = merged
			msgs, err = promptMessages(e.Template, merged)
		}
	}
	if err != nil {
		return nil, err
	}
	a.remember(r, e.Template, p.Arguments)
	if len(e.Template.Resources) > 0 {
		msgs = append(msgs, a.embeddedResources(ctx, v, e.Template)...)
	}
	return &mcp.GetPromptResult{Description: e.Template.Metadata.Description, Messages: msgs,
		Meta: servedMeta(v, e.Template.Metadata.Name, modelMeta(e.Template))}, nil
}

// promptMessages renders t with args into prompts/get's messages: one user
// message with the prompt text, or, for a conversation template, the
// messages render.Conversation gives (the results' text first, as a user
// message, then the template's messages, each with its own role).
func promptMessages(t *templates.Template, args map[string]string) ([]mcp.PromptMessage, error) {
	if len(t.Messages) == 0 {
		text, err := render.Prompt(t, args)
		if err != nil {
			return nil, err
		}
		return []mcp.PromptMessage{{Role: "user", Content: mcp.TextContent(text)}}, nil
	}
	conv, err := render.Conversation(t, args)
	if err != nil {
		return nil, err
	}
	msgs := make([]mcp.PromptMessage, len(conv), len(conv)+len(t.Resources))
	for i, m := range conv {
		msgs[i] = mcp.PromptMessage{Role: m.Role, Content: mcp.TextContent(m.Text)}
	}
	return msgs, nil
}

// noteUsage tells the audit log (when there is one) which template, and
// which version of it from which source, the request uses.
func noteUsage(ctx context.Context, e *templates.Entry, cat *templates.Catalog) {
	info := cat.Info()
	audit.Note(ctx, audit.Usage{Template: e.Template.Metadata.Name, Version: e.Template.Metadata.Version,
		Source: info.Kind, Revision: info.Revision})
}

// remember keeps the values a session used, for argument completion.
func (a *App) remember(r *mcp.Request, t *templates.Template, args map[string]string) {
	if r == nil {
		return
	}
	for k, v := range args {
		if _, ok := t.Variable(k); ok {
			a.used.remember(r.SessionID(), t.Metadata.Name, k, v)
		}
	}
}

// ModelMetaKey is the _meta key under which a prompt carries the model
// settings its file gives (a .prompt.yml's model and modelParameters, a
// dotprompt's model and config, a Prompty's model).
const ModelMetaKey = "io.flowyprompt/model"

// modelMeta is a prompt's _meta for t: its model settings, or nil when
// its file gives none.
func modelMeta(t *templates.Template) map[string]any {
	if t.Model == nil {
		return nil
	}
	return map[string]any{ModelMetaKey: t.Model}
}

// templateTitle is the title clients show: the name a file of another
// format gives itself, else the name in words.
func templateTitle(t *templates.Template) string {
	if t.Metadata.Title != "" {
		if ns, _, ok := strings.Cut(t.Metadata.Name, templates.NamespaceSeparator); ok {
			return t.Metadata.Title + " (" + ns + ")"
		}
		return t.Metadata.Title
	}
	return title(t.Metadata.Name)
}

// templateMIME is the media type of a template's file.
func templateMIME(t *templates.Template) string {
	switch t.Format {
	case templates.FormatPromptYML:
		return "application/yaml"
	case templates.FormatDotprompt, templates.FormatPrompty:
		return "text/markdown"
	}
	return "application/json"
}

package app

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
)

// TemplateWriter saves a validated template file; the GitHub source
// commits it, the directory source writes it to the folder.
type TemplateWriter interface {
	// SaveTemplate stores data as NAME.json and returns where it landed
	// (a commit URL or a file path).
	SaveTemplate(ctx context.Context, name string, data []byte, message string) (string, error)
}

const saveToolName = "flowyprompt_save_template"

// saveTool is the opt-in save tool; its description and schemas are in
// the tools folder (see toolFS).
func (a *App) saveTool() *tool {
	return toolFromFiles(saveToolName, "Save a template",
		&mcp.ToolAnnotations{ReadOnlyHint: boolPtr(false), DestructiveHint: boolPtr(false), IdempotentHint: boolPtr(false), OpenWorldHint: boolPtr(true)},
		a.saveTemplate)
}

func (a *App) saveTemplate(ctx context.Context, _ *mcp.Request, in toolArgs) (*toolResult, error) {
	var args struct {
		Template string `json:"template"`
		Message  string `json:"message"`
	}
	if err := in.decode(&args); err != nil {
		return nil, err
	}
	t, _, err := templates.Parse([]byte(args.Template), templates.ParseOptions{MaxFileSize: a.opts.MaxFileSize})
	if err != nil {
		f := fault.As(err)
		if f != nil && len(templates.Problems(err)) > 0 {
			var lines []string
			for _, p := range templates.Problems(err) {
				lines = append(lines, fmt.Sprintf("%s: %s", pointerOrRoot(p.Pointer), p.Message))
			}
			f.Why = strings.Join(lines, "; ")
			f.How = "fix each field and check it with flowyprompt_validate_template before saving"
		}
		return nil, err
	}
	name := t.Metadata.Name
	if !a.nameAllowed(name) {
		return nil, &fault.Error{Code: fault.WriteDisabled, What: fmt.Sprintf("saving %q is not allowed", name),
			Why: fmt.Sprintf("the server only allows names matching %s", strings.Join(a.opts.WritePatterns, ", ")),
			How: "rename the template (metadata.name) to match one of the patterns, or ask the operator to allow it (--write-allow)"}
	}
	_, existed := a.lib.Catalog().Lookup(name)
	loc, err := a.opts.Writer.SaveTemplate(ctx, name, []byte(args.Template), args.Message)
	if err != nil {
		return nil, err
	}
	// Show the saved version at once, rather than after the watcher or the
	// TTL notices it.
	if _, err := a.lib.Refresh(ctx); err != nil {
		a.log.Warn("saved the template but could not reload the library", "template", name, "err", err)
	}
	verb := "Created"
	if existed {
		verb = "Updated"
	}
	text := fmt.Sprintf("## Result\n%s template %s v%s.\n\n## Saved to\n%s\n\n## Next actions\n- See it: flowyprompt_get_template(name=%q)\n- Render it: flowyprompt_render_template(name=%q, arguments={...})",
		verb, name, t.Metadata.Version, loc, name, name)
	return &toolResult{text: text, structured: map[string]any{"name": name, "location": loc, "created": !existed}}, nil
}

// nameAllowed applies the operator's allow-list of name patterns.
func (a *App) nameAllowed(name string) bool {
	if len(a.opts.WritePatterns) == 0 {
		return true
	}
	for _, p := range a.opts.WritePatterns {
		if ok, err := path.Match(p, name); err == nil && ok {
			return true
		}
	}
	return false
}

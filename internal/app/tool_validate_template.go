package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
)

// validateTemplate is the validate tool: templates.Validate's report on
// a template's text, as `flowyprompt validate` prints it.
func (a *App) validateTemplate(_ context.Context, _ *mcp.Request, in toolArgs) (*toolResult, error) {
	var args struct {
		Template string `json:"template"`
		FileName string `json:"file_name"`
	}
	if err := in.decode(&args); err != nil {
		return nil, err
	}
	rep := templates.Validate([]byte(args.Template), args.FileName, a.opts.MaxFileSize)
	var b strings.Builder
	if rep.Valid {
		fmt.Fprintf(&b, "## Result\nValid template %s.\n", rep.Name)
	} else {
		fmt.Fprintf(&b, "## Result\nInvalid template (%s): %d error(s).\n\n## Errors\n", rep.Code, len(rep.Errors))
		for _, p := range rep.Errors {
			fmt.Fprintf(&b, "- %s: %s\n", pointerOrRoot(p.Pointer), p.Message)
		}
	}
	if len(rep.Warnings) > 0 {
		b.WriteString("\n## Warnings\n")
		for _, w := range rep.Warnings {
			fmt.Fprintf(&b, "- %s\n", w)
		}
	}
	b.WriteString("\n## Next actions\n")
	if rep.Valid {
		b.WriteString("- Save it to the template folder or repository (flowyprompt_save_template when enabled)\n")
	} else {
		b.WriteString("- Fix each error at its JSON pointer and validate again\n- See a valid example: flowyprompt_get_template(name=\"Code_Review\")\n")
	}
	return &toolResult{text: strings.TrimRight(b.String(), "\n"), structured: rep}, nil
}

package app

import (
	"context"
	"encoding/json"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/mcp"
)

// TemplateWriter saves a validated template file; the GitHub source
// commits it, the directory source writes it to the folder.
type TemplateWriter interface {
	// SaveTemplate stores data as NAME.json and returns where it landed
	// (a commit URL or a file path).
	SaveTemplate(ctx context.Context, name string, data []byte, message string) (string, error)
}

func (a *App) saveTool() *tool {
	return newTool("flowyprompt_save_template", "Save a template", `
Save a template to the library: commit it to the configured GitHub branch, or write it to the template folder.

USE WHEN:
- The user asked to create or update a template and it validates

RETURNS:
- Where it was saved (commit URL or file path) and whether it was created or updated

RELATED TOOLS:
- flowyprompt_validate_template first, to check it
- flowyprompt_refresh_templates afterwards, to see it listed

LIMITS:
- Only enabled by the server operator (--allow-write); names must match the allowed patterns; size limit applies`,
		`{"type": "object", "additionalProperties": false, "required": ["template", "message"], "properties": {
  "template": {"type": "string", "minLength": 1, "maxLength": 1048576, "description": "The whole template file as JSON text; metadata.name becomes the file name.\nHOW TO GET: write it and check it with flowyprompt_validate_template"},
  "message": {"type": "string", "minLength": 1, "maxLength": 500, "description": "Commit message describing the change.\nEXAMPLE: \"Add SQL review template\""}}}`,
		`{"type": "object", "properties": {"name": {"type": "string"}, "location": {"type": "string"}}, "required": ["name", "location"]}`,
		&mcp.ToolAnnotations{ReadOnlyHint: boolPtr(false), DestructiveHint: boolPtr(false), IdempotentHint: boolPtr(false), OpenWorldHint: boolPtr(true)},
		func(ctx context.Context, r *mcp.Request, raw json.RawMessage) (*toolResult, error) {
			return nil, fault.New(fault.WriteDisabled, "saving templates is not available yet", "", "")
		})
}

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
// the tools folder (see toolFS). It is destructive: an update replaces
// the template's file (guarded by expected_version).
func (a *App) saveTool() *tool {
	annotations := &mcp.ToolAnnotations{ReadOnlyHint: boolPtr(false), DestructiveHint: boolPtr(true), IdempotentHint: boolPtr(false), OpenWorldHint: boolPtr(true)}
	if limit := a.opts.MaxFileSize; limit > 0 && limit != templates.DefaultMaxFileSize {
		// The schema advertises the default limit; an operator's own
		// limit replaces it.
		t := toolTexts()[saveToolName]
		input := strings.Replace(t.input, `"maxLength": 102400`, fmt.Sprintf(`"maxLength": %d`, limit), 1)
		input = strings.Replace(input, "At most 102,400 bytes", fmt.Sprintf("At most %d bytes", limit), 1)
		return newTool(saveToolName, "Save a template", t.description, input, t.output, annotations, a.saveTemplate)
	}
	return toolFromFiles(saveToolName, "Save a template", annotations, a.saveTemplate)
}

// saveNotice is a safety notice of a successful save: a validation
// warning, or a version that did not change.
type saveNotice struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Pointer string `json:"pointer,omitempty"`
}

// saveTemplate is the save tool: a valid template whose name the
// operator allows, written through the Writer (a commit, or a file of the
// folder), refusing to overwrite a change made meanwhile.
func (a *App) saveTemplate(ctx context.Context, r *mcp.Request, in toolArgs) (*toolResult, error) {
	var args struct {
		Template        string  `json:"template"`
		Message         string  `json:"message"`
		ExpectedVersion *string `json:"expected_version"`
	}
	if err := in.decode(&args); err != nil {
		return nil, err
	}
	t, warnings, err := a.parseForSave(args.Template)
	if err != nil {
		return nil, err
	}
	name := t.Metadata.Name
	if err := a.checkName(name); err != nil {
		return nil, err
	}
	v, err := a.viewOf(ctx, r)
	if err != nil {
		return nil, err
	}
	if err := a.mayWrite(ctx, v, name); err != nil {
		return nil, err
	}
	prev, existed := v.cat.Lookup(name)
	replaced := ""
	if existed {
		replaced = prev.Template.Metadata.Version
	}
	notices, err := checkReplace(t, warnings, name, existed, replaced, args.ExpectedVersion)
	if err != nil {
		return nil, err
	}
	loc, err := a.opts.Writer.SaveTemplate(ctx, name, []byte(args.Template), args.Message)
	if err != nil {
		return nil, err
	}
	// Show the saved version at once, rather than after the watcher or the
	// TTL notices it.
	if _, err := v.lib.Refresh(ctx); err != nil {
		a.log.Warn("saved the template but could not reload the library", "template", name, "err", err)
	}
	var b strings.Builder
	if existed {
		fmt.Fprintf(&b, "## Result\nUpdated template %s v%s (replaced v%s).\n", name, t.Metadata.Version, replaced)
	} else {
		fmt.Fprintf(&b, "## Result\nCreated template %s v%s.\n", name, t.Metadata.Version)
	}
	fmt.Fprintf(&b, "\n## Saved to\n%s\n", loc)
	if len(notices) > 0 {
		b.WriteString("\n## Safety notices\nSaved, but check these:\n")
		for _, n := range notices {
			if n.Pointer != "" {
				fmt.Fprintf(&b, "- %s: %s\n", n.Pointer, n.Message)
			} else {
				fmt.Fprintf(&b, "- %s\n", n.Message)
			}
		}
	}
	fmt.Fprintf(&b, "\n## Next actions\n- See it: flowyprompt_get_template(name=%q)\n- Render it: flowyprompt_render_template(name=%q, arguments={...})\n- Update it later: flowyprompt_save_template(template=..., message=..., expected_version=%q)",
		name, name, t.Metadata.Version)
	structured := map[string]any{"name": name, "version": t.Metadata.Version, "location": loc, "created": !existed, "notices": notices}
	if notices == nil {
		structured["notices"] = []saveNotice{}
	}
	if existed {
		structured["replaced_version"] = replaced
	}
	return &toolResult{text: b.String(), structured: structured}, nil
}

// parseForSave parses a template to save; an invalid one is refused with
// every problem at its JSON pointer.
func (a *App) parseForSave(text string) (*templates.Template, []templates.Warning, error) {
	t, warnings, err := templates.Parse([]byte(text), templates.ParseOptions{MaxFileSize: a.opts.MaxFileSize})
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
		return nil, nil, err
	}
	return t, warnings, nil
}

// checkName refuses a name the operator's allow-list does not admit,
// suggesting one it does.
func (a *App) checkName(name string) error {
	if a.nameAllowed(name) {
		return nil
	}
	f := &fault.Error{Code: fault.NameNotAllowed, What: fmt.Sprintf("saving %q is not allowed", name),
		Why: fmt.Sprintf("the server only allows names matching %s", strings.Join(a.opts.WritePatterns, ", ")),
		How: "rename the template (metadata.name) to match one of the patterns, or ask the operator to allow it (--write-allow)"}
	if ex := a.allowedExample(name); ex != "" {
		f.How = fmt.Sprintf("rename the template (metadata.name) to match one of the patterns, e.g. %q, or ask the operator to allow it (--write-allow)", ex)
		f.Suggestions = []string{ex}
	}
	return f
}

// checkReplace refuses a save that would overwrite a change made
// meanwhile (expected_version missing or stale, or given for a template
// that does not exist) or move a template to a lower version; it returns
// the safety notices to show with a save it allows: the parse warnings,
// and an unchanged version.
func checkReplace(t *templates.Template, warnings []templates.Warning, name string, existed bool, replaced string, expected *string) ([]saveNotice, error) {
	switch {
	case existed && expected == nil:
		return nil, &fault.Error{Code: fault.WriteConflict, What: fmt.Sprintf("template %s exists (v%s): saving would replace it", name, replaced),
			Why: "an update must say which version it replaces, so that a change made meanwhile is not overwritten",
			How: fmt.Sprintf("check it with flowyprompt_get_template(name=%q), then save again with expected_version=%q", name, replaced)}
	case existed && *expected != replaced:
		return nil, &fault.Error{Code: fault.WriteConflict, What: fmt.Sprintf("template %s is at v%s, not v%s", name, replaced, *expected),
			Why: "it changed since you read it, or expected_version is wrong",
			How: fmt.Sprintf("read the current version with flowyprompt_get_template(name=%q), merge, and save with expected_version=%q", name, replaced)}
	case !existed && expected != nil:
		return nil, &fault.Error{Code: fault.WriteConflict, What: fmt.Sprintf("template %s does not exist, so it cannot be at v%s", name, *expected),
			Why: "expected_version is for updates; it was removed or renamed meanwhile, or the name is misspelt",
			How: "leave out expected_version to create it, or check the name with flowyprompt_list_templates"}
	}
	var notices []saveNotice
	for _, w := range warnings {
		notices = append(notices, saveNotice{Kind: w.Kind, Message: w.Message, Pointer: w.Pointer})
	}
	if existed {
		switch c := compareSemver(t.Metadata.Version, replaced); {
		case c < 0:
			return nil, &fault.Error{Code: fault.InvalidArgument, What: fmt.Sprintf("version %s is lower than the version it replaces, %s", t.Metadata.Version, replaced),
				Why: "a save must not move a template back to an older version number, which clients and caches would take for the older template",
				How: fmt.Sprintf("set metadata.version higher than %s, e.g. %q (a rollback is a new version too)", replaced, bumpPatch(replaced))}
		case c == 0:
			notices = append(notices, saveNotice{Kind: "version_unchanged", Pointer: "/metadata/version",
				Message: fmt.Sprintf("the version stays %s although the content is replaced; raise metadata.version so that clients can tell the two apart", replaced)})
		}
	}
	return notices, nil
}

// allowedExample is a name the allow-list accepts, made from name and the
// first pattern that yields one ("team_*" and "other": "team_other").
func (a *App) allowedExample(name string) string {
	for _, p := range a.opts.WritePatterns {
		ex := strings.ReplaceAll(strings.ReplaceAll(p, "*", name), "?", "x")
		if ok, err := path.Match(p, ex); err == nil && ok {
			return ex
		}
	}
	return ""
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

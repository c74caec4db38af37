package app

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
)

// TemplateWriter saves a validated template file; the GitHub source
// proposes it as a pull request, the directory source writes it to the
// folder.
type TemplateWriter interface {
	// SaveTemplate stores data as the template name and says where it
	// landed: the file written (Location), or the pull request that
	// proposes it (Proposal, with its URL as Location). message describes
	// the change (a commit's message, a pull request's title).
	SaveTemplate(ctx context.Context, name string, data []byte, message string) (templates.Saved, error)
}

const saveToolName = "flowyprompt_save_template"

// saveTool is the opt-in save tool; its description and schemas are in
// the tools folder (see toolFS). Writing a folder is destructive: an
// update replaces the template's file (guarded by expected_version). A
// writer that proposes (templates.Proposals, the GitHub source) replaces
// nothing served: it opens a pull request, which its title says.
func (a *App) saveTool() *tool {
	title := "Save a template"
	annotations := &mcp.ToolAnnotations{ReadOnlyHint: boolPtr(false), DestructiveHint: boolPtr(true), IdempotentHint: boolPtr(false), OpenWorldHint: boolPtr(true)}
	if proposes(a.opts.Writer) {
		title = "Propose a template (pull request)"
		annotations.DestructiveHint = boolPtr(false)
	}
	t := toolTexts()[saveToolName]
	input := t.input
	if c, ok := a.opts.Writer.(*templates.Composite); ok {
		// The source argument names the sources served that can save.
		input = strings.Replace(input, "one of NAMES", "one of "+strings.Join(c.Saves(), ", "), 1)
	} else {
		// One source: there is nothing to choose.
		input = withoutProperty(input, "source")
	}
	if limit := a.opts.MaxFileSize; limit > 0 && limit != templates.DefaultMaxFileSize {
		// The schema advertises the default limit; an operator's own
		// limit replaces it.
		input = strings.Replace(input, `"maxLength":102400`, fmt.Sprintf(`"maxLength":%d`, limit), 1)
		input = strings.Replace(input, "At most 102,400 bytes", fmt.Sprintf("At most %d bytes", limit), 1)
	}
	return newTool(saveToolName, title, t.description, input, withErrorShape(t.output), annotations, a.saveTemplate)
}

// withoutProperty is the compact JSON schema without its property name,
// which is not the first of its object: the input schema's file holds
// the source argument after the others.
func withoutProperty(schema, name string) string {
	key := `,"` + name + `":`
	i := strings.Index(schema, key)
	if i < 0 {
		return schema
	}
	d := json.NewDecoder(strings.NewReader(schema[i+len(key):]))
	var value json.RawMessage
	if d.Decode(&value) != nil {
		return schema
	}
	return schema[:i] + schema[i+len(key)+int(d.InputOffset()):]
}

// writerOf is what saves a template for a request served v: the
// server's Writer, or, for a request served another label, that label's
// library's source, so that a change is proposed against the ref the
// client reads (and expected_version was checked against) rather than
// the default's.
func (a *App) writerOf(v view) TemplateWriter {
	if v.lib != a.lib {
		if w, ok := v.source().(TemplateWriter); ok {
			return w
		}
	}
	return a.opts.Writer
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
		Source          string  `json:"source"`
	}
	if err := in.decode(&args); err != nil {
		return nil, err
	}
	t, warnings, err := a.parseForSave(args.Template)
	if err != nil {
		return nil, err
	}
	if err := a.checkName(t.Metadata.Name); err != nil {
		return nil, err
	}
	v, err := a.viewOf(ctx, r)
	if err != nil {
		return nil, err
	}
	// name is the template as served: SOURCE/NAME when there are several.
	name, err := a.saveTarget(ctx, v, t.Metadata.Name, args.Source)
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
	saved, err := a.writerOf(v).SaveTemplate(ctx, name, []byte(args.Template), args.Message)
	if err != nil {
		return nil, err
	}
	pr := saved.Proposal
	if pr == nil {
		// Show the saved version at once, rather than after the watcher
		// or the TTL notices it. A proposal changed nothing served.
		if _, err := v.lib.Refresh(ctx); err != nil {
			a.log.Warn("saved the template but could not reload the library", "template", name, "err", err)
		}
	}
	// target names the source in a later save, where there are several.
	target := ""
	if ns, _, ok := strings.Cut(name, templates.NamespaceSeparator); ok {
		target = fmt.Sprintf(", source=%q", ns)
	}
	var b strings.Builder
	switch {
	case pr != nil && pr.Updated:
		fmt.Fprintf(&b, "## Result\nUpdated pull request #%d proposing template %s v%s; nothing is served until it is merged.\n", pr.Number, name, t.Metadata.Version)
	case pr != nil:
		fmt.Fprintf(&b, "## Result\nOpened pull request #%d proposing template %s v%s; nothing is served until it is merged.\n", pr.Number, name, t.Metadata.Version)
	case existed:
		fmt.Fprintf(&b, "## Result\nUpdated template %s v%s (replaced v%s).\n", name, t.Metadata.Version, replaced)
	default:
		fmt.Fprintf(&b, "## Result\nCreated template %s v%s.\n", name, t.Metadata.Version)
	}
	if pr != nil {
		fmt.Fprintf(&b, "\n## Pull request\n%s (branch %s)\n", pr.URL, pr.Branch)
	} else {
		fmt.Fprintf(&b, "\n## Saved to\n%s\n", saved.Location)
	}
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
	if pr != nil {
		// What is served is still the version replaced: an update of the
		// proposal names that one again.
		expect := target
		if existed {
			expect += fmt.Sprintf(", expected_version=%q", replaced)
		}
		fmt.Fprintf(&b, "\n## Next actions\n- Ask a reviewer to merge %s\n- Change the proposal: flowyprompt_save_template(template=..., message=...%s) updates this pull request", pr.URL, expect)
	} else {
		fmt.Fprintf(&b, "\n## Next actions\n- See it: flowyprompt_get_template(name=%q)\n- Render it: flowyprompt_render_template(name=%q, arguments={...})\n- Update it later: flowyprompt_save_template(template=..., message=...%s, expected_version=%q)",
			name, name, target, t.Metadata.Version)
	}
	structured := map[string]any{"name": name, "version": t.Metadata.Version, "location": saved.Location, "created": !existed, "notices": notices}
	if pr != nil {
		structured["pull_request"] = map[string]any{"url": pr.URL, "number": pr.Number, "branch": pr.Branch, "updated": pr.Updated}
	}
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

package app

import (
	"context"
	"encoding/base64"
	"fmt"
	"mime"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
)

// TemplateURIPrefix names templates as resources: template://NAME is the
// template file's JSON.
const TemplateURIPrefix = "template://"

// FileURIPrefix names the files a template lists in its resources:
// template-file:///guides/style.md is guides/style.md of the template
// source. Resource URIs must be absolute (clients such as the Python SDK
// refuse a bare path), and the empty authority keeps them apart from
// template://NAME.
const FileURIPrefix = "template-file:///"

// resourceThere reports whether the source can serve the listed file p.
func resourceThere(ctx context.Context, rr templates.ResourceReader, p string) bool {
	return templates.CheckResource(ctx, rr, p) == nil
}

// ListResources lists every template as a resource, in name order, then
// the files templates list, in path order.
func (a *App) ListResources(ctx context.Context, r *mcp.Request) ([]mcp.Resource, error) {
	v, err := a.viewOf(ctx, r)
	if err != nil {
		return nil, err
	}
	cat := v.cat
	entries := cat.Templates()
	out := make([]mcp.Resource, 0, len(entries))
	for _, e := range entries {
		m := e.Template.Metadata
		out = append(out, mcp.Resource{URI: TemplateURIPrefix + m.Name, Name: m.Name, Title: templateTitle(e.Template),
			Description: sentence(m.Description), MimeType: templateMIME(e.Template), Size: int64(len(e.Raw))})
	}
	rr, _ := v.source().(templates.ResourceReader)
	for _, p := range listedFiles(cat) {
		// A file that is not there (or cannot be served) is not
		// advertised: reading it would fail.
		if rr == nil {
			break
		}
		if !resourceThere(ctx, rr, p) {
			continue
		}
		var by []string
		for _, e := range entries {
			if slices.ContainsFunc(e.Template.Resources, func(r string) bool { return filePath(r) == p }) {
				by = append(by, e.Template.Metadata.Name)
			}
		}
		out = append(out, mcp.Resource{URI: FileURIPrefix + p, Name: p, MimeType: mimeOf(p),
			Description: listedBy(by)})
	}
	return out, nil
}

// sentence is s ending with a full stop (or another closing mark).
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || strings.HasSuffix(s, ".") || strings.HasSuffix(s, "!") || strings.HasSuffix(s, "?") || strings.HasSuffix(s, "。") {
		return s
	}
	return s + "."
}

// listedBy describes a context file by the templates that list it, in a
// sentence.
func listedBy(names []string) string {
	switch len(names) {
	case 0:
		return "A context file that templates list as a resource."
	case 1:
		return "A context file that the template " + names[0] + " lists as a resource."
	}
	return "A context file that the templates " + strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1] + " list as a resource."
}

// listedFiles returns the paths of the files cat's templates list as
// resources, cleaned, sorted and once each.
func listedFiles(cat *templates.Catalog) []string {
	var out []string
	for _, e := range cat.Templates() {
		for _, r := range e.Template.Resources {
			if p := filePath(r); p != "" {
				out = append(out, p)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// filePath is the cleaned path of a resources entry that names a file, or
// "" for template://NAME.
func filePath(r string) string {
	if strings.Contains(r, "://") {
		return ""
	}
	return path.Clean(r)
}

// mimeOf guesses a file's type from its extension, as the sources do.
func mimeOf(p string) string {
	if t := mime.TypeByExtension(path.Ext(p)); t != "" {
		return t
	}
	return "text/plain"
}

// ListResourceTemplates offers template://{name}.
func (a *App) ListResourceTemplates(context.Context, *mcp.Request) ([]mcp.ResourceTemplate, error) {
	return []mcp.ResourceTemplate{{URITemplate: TemplateURIPrefix + "{name}", Name: "template", Title: "Prompt template",
		Description: "A prompt template's JSON definition, by name (names from prompts/list or flowyprompt_list_templates).",
		MimeType:    "application/json"}}, nil
}

// ReadResource returns a template's JSON.
func (a *App) ReadResource(ctx context.Context, r *mcp.Request, uri string) (*mcp.ReadResourceResult, error) {
	v, err := a.viewOf(ctx, r)
	if err != nil {
		return nil, err
	}
	c, err := a.resourceContents(ctx, v, uri, false)
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{c}}, nil
}

// resourceContents reads uri as cat has it. listed says that a template of
// cat lists the resource, so it need not be looked for.
func (a *App) resourceContents(ctx context.Context, v view, uri string, listed bool) (mcp.ResourceContents, error) {
	res, err := a.locate(v, uri, listed)
	if err != nil {
		return mcp.ResourceContents{}, err
	}
	if res.entry != nil {
		return mcp.ResourceContents{URI: res.uri, MimeType: templateMIME(res.entry.Template), Text: string(res.entry.Raw)}, nil
	}
	data, mimeType, err := res.rr.ReadResource(ctx, res.rel)
	if err != nil {
		return mcp.ResourceContents{}, err
	}
	if isText(mimeType, data) {
		return mcp.ResourceContents{URI: res.uri, MimeType: mimeType, Text: string(data)}, nil
	}
	return mcp.ResourceContents{URI: res.uri, MimeType: mimeType, Blob: base64.StdEncoding.EncodeToString(data)}, nil
}

// CheckResource reports whether ReadResource would serve uri, without
// reading it: a template is looked up in the catalog, a file among those
// the templates list and then by its source, as resources/list does.
func (a *App) CheckResource(ctx context.Context, r *mcp.Request, uri string) error {
	v, err := a.viewOf(ctx, r)
	if err != nil {
		return err
	}
	res, err := a.locate(v, uri, false)
	if err != nil || res.entry != nil {
		return err
	}
	return templates.CheckResource(ctx, res.rr, res.rel)
}

// located is where a resource URI leads: a template of the catalog, or a
// file its source reads.
type located struct {
	uri   string           // the URI as served
	entry *templates.Entry // the template, for template://NAME
	rr    templates.ResourceReader
	rel   string // the file's path in the source, for a file
}

// locate finds what uri names in cat, reading nothing, or the
// resource-not-found fault. listed says that a template of cat lists the
// resource, so it need not be looked for among the listed files.
func (a *App) locate(v view, uri string, listed bool) (located, error) {
	cat := v.cat
	if name, ok := strings.CutPrefix(uri, TemplateURIPrefix); ok {
		// A client expanding template://{name} by RFC 6570 escapes the
		// '/' of NAMESPACE/NAME; no name holds a '%', so unescaping it
		// cannot mistake one name for another.
		name = strings.NewReplacer("%2F", "/", "%2f", "/").Replace(name)
		e, found := cat.Lookup(name)
		if !found {
			f := templates.NotFound(name, cat)
			f.Code = fault.ResourceNotFound
			f.Details["uri"] = shownURI(uri)
			return located{}, f
		}
		return located{uri: uri, entry: e}, nil
	}
	if strings.Contains(uri, "://") && !strings.HasPrefix(uri, FileURIPrefix) {
		return located{}, &fault.Error{Code: fault.ResourceNotFound, What: fmt.Sprintf("unknown resource %q", shownURI(uri)),
			Why: "this server serves template://NAME resources and template-file:///PATH files its templates list",
			How: "list them with resources/list", Details: map[string]any{"uri": shownURI(uri)}}
	}
	// A file: template-file:///PATH, or the bare path as a template lists it.
	rel := strings.TrimPrefix(uri, FileURIPrefix)
	uri = FileURIPrefix + path.Clean(rel)
	// Only files a template lists are served: the template folder may hold
	// anything else (a .git directory, an .env file, notes), and clients
	// over HTTP are not necessarily the folder's owner.
	if !listed && !a.listedResource(cat, rel) {
		return located{}, &fault.Error{Code: fault.ResourceNotFound, What: fmt.Sprintf("unknown resource %q", shownURI(uri)),
			Why: "files of the template source are served only when a template lists them in its resources",
			How: "list the file in a template's resources, or use template://NAME resources", Details: map[string]any{"uri": shownURI(uri)}}
	}
	rr, ok := v.source().(templates.ResourceReader)
	if !ok {
		return located{}, &fault.Error{Code: fault.ResourceNotFound, What: fmt.Sprintf("cannot read %q", shownURI(uri)),
			Why: "this template source cannot serve files other than templates", How: "use template://NAME resources"}
	}
	return located{uri: uri, rr: rr, rel: rel}, nil
}

// maxShownURI is the most of a URI an error quotes back: enough to
// recognise it, and a client sending a megabyte of URI does not get it
// back, twice.
const maxShownURI = 256

// shownURI is uri as errors quote it, cut at maxShownURI characters.
func shownURI(uri string) string {
	if len(uri) <= maxShownURI {
		return uri
	}
	return truncateRunes(uri, maxShownURI)
}

// listedResource reports whether a template of cat lists the path p in its
// resources (compared as cleaned slash paths). The list is made once per
// catalog: a subscriptions/listen may ask about a thousand files at once.
func (a *App) listedResource(cat *templates.Catalog, p string) bool {
	listed := a.listed.get(cat, func() []string { return listedFiles(cat) })
	_, found := slices.BinarySearch(listed, path.Clean(p))
	return found
}

// isText reports whether a file goes out as text: a textual MIME type and
// valid UTF-8. Anything else is sent as a base64 blob, since JSON text
// would corrupt it.
func isText(mimeType string, data []byte) bool {
	mt, _, _ := mime.ParseMediaType(mimeType)
	textual := strings.HasPrefix(mt, "text/") || strings.HasSuffix(mt, "+json") || strings.HasSuffix(mt, "+xml") ||
		slices.Contains([]string{"application/json", "application/xml", "application/yaml", "application/x-yaml",
			"application/javascript", "application/toml", "application/sql"}, mt)
	return textual && utf8.Valid(data)
}

// attachment is one entry of a template's resources, read for a prompt.
type attachment struct {
	uri      string               // the absolute URI: template://NAME or template-file:///PATH
	contents mcp.ResourceContents // its contents, when err is nil
	err      error                // why it could not be read
}

// attachments reads a template's resources, in the order it lists them.
// One that cannot be read (a file that is not there, a template since
// removed) does not fail the prompt: it comes back with its error, and
// the server logs a warning, since the author has something to fix.
func (a *App) attachments(ctx context.Context, v view, t *templates.Template) []attachment {
	cat := v.cat
	out := make([]attachment, 0, len(t.Resources))
	for _, uri := range t.Resources {
		c, err := a.resourceContents(ctx, v, uri, true)
		if err != nil {
			abs := uri
			if p := filePath(uri); p != "" {
				abs = FileURIPrefix + p
			}
			if a.firstMissing(cat, t.Metadata.Name, uri) {
				a.log.Warn("a resource the template lists cannot be read: the prompt is served without it; fix the path in its resources or add the file",
					"template", t.Metadata.Name, "resource", uri, "err", err)
			}
			out = append(out, attachment{uri: abs, err: err})
			continue
		}
		out = append(out, attachment{uri: c.URI, contents: c})
	}
	return out
}

// embeddedResources turns a template's `resources` into prompt messages
// that follow the text (seed 001: embedded resource context). Those that
// cannot be read are named in a last text message instead.
func (a *App) embeddedResources(ctx context.Context, v view, t *templates.Template) []mcp.PromptMessage {
	att := a.attachments(ctx, v, t)
	msgs := make([]mcp.PromptMessage, 0, len(att)+1)
	var missing []string
	for _, at := range att {
		if at.err != nil {
			missing = append(missing, fmt.Sprintf("- %s: %v", at.uri, at.err))
			continue
		}
		msgs = append(msgs, mcp.PromptMessage{Role: "user", Content: mcp.Content{Type: "resource", Resource: &at.contents}})
	}
	if len(missing) > 0 {
		msgs = append(msgs, mcp.PromptMessage{Role: "user", Content: mcp.TextContent(
			"Note: the template lists these resources, but they were not attached because they cannot be read:\n" + strings.Join(missing, "\n") +
				"\nWork without them, and say so where the answer depends on them.")})
	}
	return msgs
}

// size is how much of a result's budget an attached resource takes: its
// characters, or its base64 bytes.
func (at attachment) size() int {
	return runeCount(at.contents.Text) + len(at.contents.Blob)
}

// firstMissing reports whether the template's resource uri is found
// unreadable for the first time in cat, so that it is logged once.
func (a *App) firstMissing(cat *templates.Catalog, template, uri string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.missingFor != cat {
		a.missingFor, a.missing = cat, map[string]bool{}
	}
	key := template + "\x00" + uri
	if a.missing[key] {
		return false
	}
	a.missing[key] = true
	return true
}

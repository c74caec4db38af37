package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
)

// templateHistory is the history tool: the commits that changed a
// template's file, with the version of each already read.
func (a *App) templateHistory(ctx context.Context, r *mcp.Request, in toolArgs) (*toolResult, error) {
	var args struct{ Name string }
	if err := in.decode(&args); err != nil {
		return nil, err
	}
	e, v, _, err := a.lookupAt(ctx, r, args.Name, "")
	if err != nil {
		return nil, err
	}
	cat := v.cat
	name := e.Template.Metadata.Name
	h, err := a.history(v, name)
	if err != nil {
		return nil, err
	}
	// One lookup: its git runs (a folder's) share one budget.
	ctx = templates.WithLookup(ctx, 0)
	revs, err := h.FileHistory(ctx, e.Path)
	if err != nil {
		return nil, err
	}
	served := servedRevision(ctx, h, e, revs.Revisions)
	var b strings.Builder
	fmt.Fprintf(&b, "## Result\n%d commits changed **%s** (%s), newest first", len(revs.Revisions), name, e.Path)
	if revs.Truncated {
		b.WriteString("; only the newest are listed, older commits may exist")
	}
	b.WriteString(".\n\n## Versions\n")
	unread := false
	for i, r := range revs.Revisions {
		v := "v" + r.Version
		if r.Version == "" {
			v, unread = "v?", true
		}
		if i == served {
			v += " (served now)"
		}
		fmt.Fprintf(&b, "%d. %s %s %s by %s: %s\n", i+1, shortSHA(r.Commit), r.Date.UTC().Format("2006-01-02T15:04:05Z"), v, r.Author, truncateRunes(r.Message, 200))
	}
	if served < 0 && len(revs.Revisions) > 0 {
		fmt.Fprintf(&b, "- The file served now (v%s) is none of these commits' (an edit not committed yet, or a newer commit than the list's).\n",
			e.Template.Metadata.Version)
	}
	note, stale := staleNote(cat)
	b.WriteString(note)
	if unread {
		b.WriteString("\nv? is a version not read yet: passing it, a tag or a commit SHA as version to flowyprompt_get_template or flowyprompt_render_template reads it.\n")
	}
	for i := range revs.Revisions {
		revs.Revisions[i].Message = truncateRunes(revs.Revisions[i].Message, 200)
	}
	structured := map[string]any{"name": name, "path": e.Path, "current_version": e.Template.Metadata.Version,
		"revisions": revs.Revisions, "truncated": revs.Truncated, "ref": revs.Ref}
	for k, v := range stale {
		structured[k] = v
	}
	return &toolResult{text: b.String(), structured: structured, view: v}, nil
}

// servedRevision is the index in revs of the commit whose file is the one
// served now, -1 when none is: the newest, unless the file was edited
// since (a folder serves its work tree), whose version it also fills in
// when not known yet. Reading it costs GitHub one request the first time;
// a commit's file is kept after. A failed read leaves it unmarked: the
// history is still worth listing.
func servedRevision(ctx context.Context, h templates.History, e *templates.Entry, revs []templates.Revision) int {
	if len(revs) == 0 {
		return -1
	}
	data, err := h.FileAt(ctx, e.Path, revs[0].Commit)
	if err != nil {
		return -1
	}
	if revs[0].Version == "" {
		revs[0].Version = templates.DeclaredVersion(data)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != e.Digest {
		return -1
	}
	return 0
}

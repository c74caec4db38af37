package github

import (
	"fmt"
	"strings"

	"github.com/flowyprompt/flowyprompt/internal/review"
	"github.com/flowyprompt/flowyprompt/internal/testrun"
	"github.com/flowyprompt/flowyprompt/templates"
)

// maxBodyBytes bounds a pull request's body under GitHub's limit of 65,536
// characters, with room for the headings: diffs beyond it are cut, and the
// pull request's "Files changed" tab has them whole.
const maxBodyBytes = 60000

// proposalBody is what a reviewer reads first: for each file, whether it
// is valid, its tests' results, and the diffs of the file and of its
// rendered prompt against the served version (commit of base).
func proposalBody(props []proposed, maxFileSize int, base, commit string) string {
	type part struct{ head, fileDiff, promptDiff string }
	parts := make([]part, 0, len(props))
	fixed := 0
	for _, p := range props {
		var h strings.Builder
		verb := "New template"
		if p.existing {
			verb = "Changed template"
		}
		fmt.Fprintf(&h, "## %s %s (`%s`)\n\n", verb, p.Name, p.path)
		rep := templates.Validate(p.Content, p.path, maxFileSize)
		switch {
		case !rep.Valid:
			fmt.Fprintf(&h, "**Validation:** invalid (%s)\n", rep.Code)
			for _, e := range rep.Errors {
				fmt.Fprintf(&h, "- `%s`: %s\n", pointerOrRoot(e.Pointer), e.Message)
			}
		case len(rep.Warnings) == 0:
			h.WriteString("**Validation:** valid, no warnings\n")
		default:
			fmt.Fprintf(&h, "**Validation:** valid, %d warning(s)\n", len(rep.Warnings))
			for _, w := range rep.Warnings {
				fmt.Fprintf(&h, "- %s\n", w)
			}
		}
		next, _, err := templates.Parse(p.Content, templates.ParseOptions{MaxFileSize: maxFileSize})
		var nextPrompt string
		if err == nil {
			rs := testrun.Run(next)
			if len(rs) == 0 {
				h.WriteString("\n**Tests:** none (add `tests` to the template to check what it renders)\n")
			} else {
				fmt.Fprintf(&h, "\n**Tests:** %s\n", testrun.Count(rs))
				for _, r := range rs {
					fmt.Fprintf(&h, "- %s\n", r.Line())
				}
			}
			nextPrompt = renderedOrWhy(next)
		}
		var prevPrompt string
		if p.served != nil {
			if prev, _, err := templates.Parse(p.served, templates.ParseOptions{MaxFileSize: maxFileSize}); err == nil {
				prevPrompt = renderedOrWhy(prev)
			}
		}
		pt := part{
			head:       h.String(),
			fileDiff:   review.Unified("a/"+p.path, "b/"+p.path, string(p.served), string(p.Content)),
			promptDiff: review.Unified("a/"+p.Name+" (rendered)", "b/"+p.Name+" (rendered)", prevPrompt, nextPrompt),
		}
		fixed += len(pt.head) + 400
		parts = append(parts, pt)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "Proposed with flowyprompt against `%s` at %s. Merging it serves the change to every client of `%s`.\n\n", base, short(commit), base)
	// Each diff gets an equal share of what the headings leave.
	share := max((maxBodyBytes-fixed)/max(2*len(parts), 1), 500)
	for _, pt := range parts {
		b.WriteString(pt.head)
		writeDiff(&b, "Diff of the file", pt.fileDiff, share)
		writeDiff(&b, "Diff of the rendered prompt (with the template's example values)", pt.promptDiff, share)
		b.WriteString("\n")
	}
	return b.String()
}

// renderedOrWhy is t rendered with its example values, or why it does
// not render.
func renderedOrWhy(t *templates.Template) string {
	text, err := review.Rendered(t)
	if err != nil {
		return "(does not render: " + err.Error() + ")\n"
	}
	return text
}

// writeDiff writes a diff under its heading in a fence no line of it can
// close, cut to limit bytes at a line's end.
func writeDiff(b *strings.Builder, heading, diff string, limit int) {
	fmt.Fprintf(b, "\n### %s\n\n", heading)
	if diff == "" {
		b.WriteString("No change.\n")
		return
	}
	cut := ""
	if len(diff) > limit {
		i := strings.LastIndexByte(diff[:limit], '\n')
		if i < 0 {
			i = 0
		}
		cut = fmt.Sprintf("… %d more line(s): see the Files changed tab\n", strings.Count(diff[i:], "\n"))
		diff = diff[:i+1]
	}
	if !strings.HasSuffix(diff, "\n") {
		diff += "\n"
	}
	fence := strings.Repeat("`", max(3, longestRun(diff, '`')+1))
	fmt.Fprintf(b, "%sdiff\n%s%s\n%s", fence, diff, fence, cut)
}

// longestRun is the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	best, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			run++
			best = max(best, run)
		} else {
			run = 0
		}
	}
	return best
}

func pointerOrRoot(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

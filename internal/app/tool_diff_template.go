package app

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/flowyprompt/flowyprompt/mcp"
)

// diffTemplate is the diff tool: what changed in a template between two
// versions (Diff), its diffs cut to stay within the result budget.
func (a *App) diffTemplate(ctx context.Context, r *mcp.Request, in toolArgs) (*toolResult, error) {
	var args struct{ Name, From, To string }
	if err := in.decode(&args); err != nil {
		return nil, err
	}
	v, err := a.viewOf(ctx, r)
	if err != nil {
		return nil, err
	}
	d, err := a.diff(ctx, v, args.Name, args.From, args.To)
	if err != nil {
		return nil, err
	}
	note, stale := staleNote(v.cat)
	// Each diff is in the result twice (text and structuredContent): a
	// long one is cut at a whole line, shorter until the result fits.
	var res *toolResult
	for _, limit := range []int{0, 20_000, 8_000, 2_000} {
		res = describeDiff(d, limit, note)
		res.view = v
		for k, v := range stale {
			res.structured.(map[string]any)[k] = v
		}
		if utf8.RuneCountInString(res.text)+jsonSize(res.structured) <= ResultBudget {
			break
		}
	}
	return res, nil
}

// describeDiff is the diff tool's result for d, each diff cut to limit
// characters (none when limit is 0).
func describeDiff(d *Diff, limit int, stale string) *toolResult {
	file, fileLeft := cutLines(d.File, limit)
	rendered, renderedLeft := cutLines(d.Rendered, limit)
	var b strings.Builder
	outcome := "is the same at %s and at %s"
	switch {
	case d.From.Absent:
		outcome = "is added from %s to %s"
	case d.To.Absent:
		outcome = "is deleted from %s to %s"
	case d.Changed():
		outcome = "changed from %s to %s"
	}
	fmt.Fprintf(&b, "## Result\n**%s** (%s) "+outcome+".\n", d.Name, d.Path, d.From.describe(), d.To.describe())
	b.WriteString("\n## File diff\n")
	writeDiff(&b, file, fileLeft)
	b.WriteString("\n## Rendered diff\nThe prompt rendered with the template's example values (its first test's arguments, else its defaults and examples).\n")
	writeDiff(&b, rendered, renderedLeft)
	truncated := fileLeft != "" || renderedLeft != ""
	if truncated {
		to := d.To.Requested
		if to != "" {
			to = " " + shellWord(to)
		}
		fmt.Fprintf(&b, "- ⚠️ Truncated to stay within the result size budget: `flowyprompt diff %s %s%s` prints the whole diffs, "+
			"and flowyprompt_get_template(name=%q, version=...) each side whole\n", shellWord(d.Name), shellWord(d.From.Requested), to, d.Name)
	}
	b.WriteString(stale)
	structured := map[string]any{"name": d.Name, "path": d.Path, "from": d.From, "to": d.To, "changed": d.Changed(),
		"file_diff": file, "rendered_diff": rendered, "truncated": truncated}
	return &toolResult{text: b.String(), structured: structured}
}

// writeDiff writes a unified diff in a fence longer than any run of
// backticks it holds, and what was cut from it.
func writeDiff(b *strings.Builder, diff, left string) {
	if diff == "" {
		b.WriteString("(no change)\n")
		return
	}
	longest, run := 0, 0
	for _, c := range diff {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", max(3, longest+1))
	fmt.Fprintf(b, "%sdiff\n%s", fence, diff)
	if !strings.HasSuffix(diff, "\n") {
		b.WriteString("\n")
	}
	fmt.Fprintf(b, "%s\n", fence)
	if left != "" {
		fmt.Fprintf(b, "- %s left out\n", left)
	}
}

// cutLines is s cut to at most limit characters at the end of a line
// (whole when limit is 0 or s fits), and how much was left out ("" for
// nothing).
func cutLines(s string, limit int) (string, string) {
	if limit == 0 || utf8.RuneCountInString(s) <= limit {
		return s, ""
	}
	cut := s[:runeOffset(s, limit)]
	if i := strings.LastIndexByte(cut, '\n'); i >= 0 {
		cut = cut[:i+1]
	}
	rest := s[len(cut):]
	return cut, fmt.Sprintf("%d more lines (%d characters)", strings.Count(strings.TrimSuffix(rest, "\n"), "\n")+1, utf8.RuneCountInString(rest))
}

// runeOffset is the byte offset of s's n-th rune (len(s) when s is
// shorter).
func runeOffset(s string, n int) int {
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}

// shellWord is s quoted for a POSIX shell when it needs it.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:@+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

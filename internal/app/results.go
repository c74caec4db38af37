// What the tools' results share: shortening, counting characters, and
// naming filters and sources in their text.

package app

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/flowyprompt/flowyprompt/templates"
)

// nonNilStrings is s, or an empty list for nil: results show [] rather
// than null.
func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// runeCount is utf8.RuneCountInString with a fast path for ASCII, eight
// bytes at a time: it counts every rendered prompt, and prompts are mostly
// ASCII.
func runeCount(s string) int {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		if w&0x8080808080808080 != 0 {
			break
		}
	}
	return i + utf8.RuneCountInString(s[i:])
}

// truncateRunes is s cut to n characters, with an ellipsis when it was
// longer.
func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// listReserve is the part of ResultBudget a list or search result keeps
// for its head, metadata and next actions.
const listReserve = 4000

// describeFilter names the category and tag filters for a Result line.
func describeFilter(category, tag string) string {
	var parts []string
	if category != "" {
		parts = append(parts, fmt.Sprintf("category %q", category))
	}
	if tag != "" {
		parts = append(parts, fmt.Sprintf("tag %q", tag))
	}
	if len(parts) == 0 {
		return ""
	}
	return " with " + strings.Join(parts, " and ")
}

// describeSince names the updated_since filter for a Result line.
func describeSince(since string) string {
	if since == "" {
		return ""
	}
	return fmt.Sprintf(", updated since %s", since)
}

// describe names a source for a Metadata line: its kind, location, ref
// and short revision.
func describe(info templates.SourceInfo) string {
	s := info.Kind
	if info.Location != "" {
		s += " " + info.Location
	}
	if info.Ref != "" {
		s += "@" + info.Ref
	}
	if info.Revision != "" {
		s += " (" + shortSHA(info.Revision) + ")"
	}
	return s
}

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

func nonNilVars(v []templates.Variable) []templates.Variable {
	if v == nil {
		return []templates.Variable{}
	}
	return v
}

func pointerOrRoot(p string) string {
	if p == "" {
		return "(document)"
	}
	return p
}

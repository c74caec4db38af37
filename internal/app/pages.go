// The list and search tools' pages: a cursor (internal/cursor's Page)
// resumes a listing with its filters and page size.

package app

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/flowyprompt/flowyprompt/internal/cursor"
	"github.com/flowyprompt/flowyprompt/internal/fault"
)

// filter is one filter argument of a paged tool, in the order the tool's
// calls show them.
type filter struct {
	name  string
	value *string
}

// resume decodes cursor c of tool and applies it: filters not given take
// the cursor's value, a zero limit takes the cursor's, and a filter given
// with another value than the cursor's is INVALID_CURSOR naming both.
// Without a cursor it returns nil; a limit still zero then takes
// defaultLimit.
func resume(tool, c string, filters []filter, limit *int, defaultLimit int) (*cursor.Page, error) {
	if c == "" {
		if *limit == 0 {
			*limit = defaultLimit
		}
		return nil, nil
	}
	p, err := cursor.Decode(c)
	if err != nil {
		return nil, &fault.Error{Code: fault.InvalidCursor, What: fmt.Sprintf("invalid cursor %q", truncateRunes(c, 60)),
			Why:     "it is not a cursor this server gave out (cursors come only from next_cursor of a previous result)",
			How:     fmt.Sprintf("call %s again without cursor for the first page", tool),
			Details: map[string]any{"field": "cursor"}}
	}
	var mismatch []string
	for _, f := range filters {
		was := p.Filters[f.name]
		switch {
		case *f.value == "":
			*f.value = was
		case normalize(*f.value) != normalize(was):
			mismatch = append(mismatch, fmt.Sprintf("%s %q (the cursor's: %q)", f.name, *f.value, was))
		}
	}
	if len(mismatch) > 0 {
		return nil, &fault.Error{Code: fault.InvalidCursor,
			What: fmt.Sprintf("the cursor continues another %s call", tool),
			Why:  "this call asks for " + strings.Join(mismatch, ", ") + "; a cursor continues only the listing it came from",
			How: fmt.Sprintf("call %s with the cursor and the filters it came with (or the cursor alone), or drop the cursor to start over with the new filters",
				tool),
			Details: map[string]any{"field": "cursor", "cursor_filters": p.Filters}}
	}
	if *limit == 0 {
		*limit = p.Limit
	}
	if *limit == 0 {
		*limit = defaultLimit
	}
	return &p, nil
}

// normalize compares filters as the tools match them: case-insensitive,
// with runs of white space as one space.
func normalize(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }

// nextPage returns the cursor of the page starting at offset (whose first
// item is key) and the call that fetches it, with every filter, the limit
// and the cursor, ready to be called as written.
func nextPage(tool string, offset int, key string, filters []filter, limit int) (string, string) {
	p := cursor.Page{Offset: offset, Key: key, Limit: limit}
	var args []string
	for _, f := range filters {
		if *f.value != "" {
			if p.Filters == nil {
				p.Filters = map[string]string{}
			}
			p.Filters[f.name] = *f.value
			args = append(args, fmt.Sprintf("%s=%s", f.name, quoteJSON(*f.value)))
		}
	}
	c := p.Encode()
	args = append(args, "limit="+strconv.Itoa(limit), "cursor="+quoteJSON(c))
	return c, fmt.Sprintf("%s(%s)", tool, strings.Join(args, ", "))
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// libraryChanged refuses a cursor whose place now holds another template.
func libraryChanged(tool string) error {
	return &fault.Error{Code: fault.InvalidCursor, What: "the library changed since the previous page",
		Why:     "templates were added or removed before the cursor's place, so going on would skip or repeat some",
		How:     fmt.Sprintf("call %s again without cursor, with the same filters, to start over", tool),
		Details: map[string]any{"field": "cursor", "reason": "library_changed"}}
}

// startOf is the offset in all where the page resumed names starts: 0
// without a cursor, and INVALID_CURSOR when its place now holds another
// item than the cursor's (key tells them apart).
func startOf[T any](tool string, resumed *cursor.Page, all []T, key func(T) string) (int, error) {
	if resumed == nil {
		return 0, nil
	}
	n, err := cursor.Place(all, *resumed, key)
	if err != nil {
		return 0, libraryChanged(tool)
	}
	return n, nil
}

// Package cursor is the one codec of the opaque cursors flowyprompt hands
// out for lists served a page at a time: MCP's list methods (Encode,
// Start) and the list and search tools, whose cursors also carry their
// filters and page size (Page). A cursor names the place the next page
// starts, its offset, and the key of the item found there, so that a list
// that changed before that place is noticed (Place), instead of the next
// page silently skipping or repeating items.
//
// The forms on the wire, each base64url (no padding) of a prefixed text,
// are kept as they were first handed out, since clients may hold them:
// "o:OFFSET:KEY" for MCP's lists, "p:" and a JSON Page for the tools, and
// the tools' earlier "t:OFFSET:KEY", still read.
package cursor

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
)

var (
	// ErrInvalid is a cursor this codec did not write, or one that points
	// past the end of the list.
	ErrInvalid = errors.New("not a cursor this server gave out")
	// ErrChanged is a cursor whose place now holds another item: the list
	// changed before it since the previous page.
	ErrChanged = errors.New("the list changed since the previous page")
)

// The prefixes mark our cursors, so that text that happens to be base64
// is not taken for one, and tell the forms apart.
const (
	listPrefix    = "o:" // MCP's list methods
	pagePrefix    = "p:" // the tools' pages, with their filters
	oldPagePrefix = "t:" // the tools' pages before they carried filters
)

// Page is the place a page starts and, for the tools' cursors, the
// listing it continues, so that the cursor alone resumes it.
type Page struct {
	Offset int    `json:"o"`
	Key    string `json:"k"` // the key of the item at Offset
	// Filters are the listing's filters by name; nil for none.
	Filters map[string]string `json:"f,omitempty"`
	// Limit is the page size; 0 when the cursor does not say.
	Limit int `json:"l,omitempty"`
}

// Encode names the page of an MCP list starting at offset, whose first
// item has key.
func Encode(offset int, key string) string {
	return encode(listPrefix + strconv.Itoa(offset) + ":" + key)
}

// Start returns the offset in all of the page c (written by Encode)
// names: 0 for "", the first page. key names an item of all; keys must be
// unique for a changed list to be noticed.
func Start[T any](all []T, c string, key func(T) string) (int, error) {
	if c == "" {
		return 0, nil
	}
	raw, ok := decode(c, listPrefix)
	if !ok {
		return 0, ErrInvalid
	}
	p, err := placeOf(raw)
	if err != nil || p.Offset > len(all) {
		return 0, ErrInvalid
	}
	return Place(all, p, key)
}

// Encode writes p as a tool's cursor.
func (p Page) Encode() string {
	b, _ := json.Marshal(p) // a struct of strings and ints always encodes
	return encode(pagePrefix + string(b))
}

// Decode reads a tool's cursor, in its current form or the earlier one
// without filters. It is ErrInvalid for anything else, a negative offset
// included; the offset is checked against the list by Place.
func Decode(c string) (Page, error) {
	var p Page
	var err error
	if raw, ok := decode(c, pagePrefix); ok {
		err = json.Unmarshal([]byte(raw), &p)
	} else if raw, ok := decode(c, oldPagePrefix); ok {
		p, err = placeOf(raw)
	} else {
		return Page{}, ErrInvalid
	}
	if err != nil || p.Offset < 0 {
		return Page{}, ErrInvalid
	}
	return p, nil
}

// Place returns p's offset in all when the item there still has p's key,
// and ErrChanged when it does not (or the offset is past the last item):
// the list changed before p's place since p was handed out.
func Place[T any](all []T, p Page, key func(T) string) (int, error) {
	if p.Offset < 0 || p.Offset >= len(all) || key(all[p.Offset]) != p.Key {
		return 0, ErrChanged
	}
	return p.Offset, nil
}

func encode(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// decode returns the text of c after prefix, when c is base64 of a text
// with that prefix.
func decode(c, prefix string) (string, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || !strings.HasPrefix(string(raw), prefix) {
		return "", false
	}
	return string(raw[len(prefix):]), true
}

// placeOf reads "OFFSET:KEY".
func placeOf(s string) (Page, error) {
	offset, key, _ := strings.Cut(s, ":")
	n, err := strconv.Atoi(offset)
	if err != nil || n < 0 {
		return Page{}, ErrInvalid
	}
	return Page{Offset: n, Key: key}, nil
}

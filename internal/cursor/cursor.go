// Package cursor is the one codec of the opaque cursors flowyprompt hands
// out for MCP's list methods, served a page at a time (the list and search
// tools' cursors, which also carry their filters, are internal/app's). A
// cursor names the place the next page starts, its offset, and the
// key of the item found there, so that a list that changed before that
// place is noticed, instead of the next page silently skipping or
// repeating items.
package cursor

import (
	"encoding/base64"
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

// prefix marks our cursors, so that text that happens to be base64 is not
// taken for one.
const prefix = "o:"

// Encode names the page starting at offset, whose first item has key.
func Encode(offset int, key string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(prefix + strconv.Itoa(offset) + ":" + key))
}

// Start returns the offset in all of the page c names: 0 for "", the
// first page. key names an item of all; keys must be unique for a changed
// list to be noticed.
func Start[T any](all []T, c string, key func(T) string) (int, error) {
	if c == "" {
		return 0, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || !strings.HasPrefix(string(raw), prefix) {
		return 0, ErrInvalid
	}
	offset, k, _ := strings.Cut(string(raw[len(prefix):]), ":")
	n, err := strconv.Atoi(offset)
	if err != nil || n < 0 || n > len(all) {
		return 0, ErrInvalid
	}
	if n == len(all) || key(all[n]) != k {
		return 0, ErrChanged
	}
	return n, nil
}

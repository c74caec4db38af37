// Package label is what the server knows of labels: a name a client asks
// for (production, staging) that picks which ref of a GitHub source it is
// served. It holds the one rule for a label's name and the keys and
// header under which a label travels; package labelset holds the
// libraries.
package label

import (
	"context"
	"fmt"
	"regexp"
)

// Header is the HTTP header a client names its label in.
const Header = "Flowyprompt-Label"

// MetaKey is the key of a request's _meta that names its label.
const MetaKey = "io.flowyprompt/label"

// ServedKey is the key of a result's _meta that says which label and
// commit served it.
const ServedKey = "io.flowyprompt/served"

// MaxName is the longest label name.
const MaxName = 64

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// Valid checks a label's name: lower-case letters, digits, '.', '_' and
// '-', starting with a letter or digit, at most MaxName bytes. A label
// travels in a header and in JSON, and is named in logs: nothing in it
// needs escaping.
func Valid(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("a label's name is empty: name it, e.g. staging")
	case len(name) > MaxName:
		return fmt.Errorf("label %.20q… is longer than %d bytes: give it a shorter name", name, MaxName)
	case !nameRE.MatchString(name):
		return fmt.Errorf("label %q is not a name of lower-case letters, digits, '.', '_' and '-' starting with a letter or digit: rename it, e.g. staging", name)
	}
	return nil
}

type headerKey struct{}

// WithHeader returns ctx carrying the label an HTTP request's Header
// named ("" when it named none): the HTTP server sets it on every request
// it lets in, and the request's handlers read it with FromHeader.
func WithHeader(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, headerKey{}, name)
}

// FromHeader is the label the HTTP request ctx serves named in its
// Header, or "".
func FromHeader(ctx context.Context) string {
	s, _ := ctx.Value(headerKey{}).(string)
	return s
}

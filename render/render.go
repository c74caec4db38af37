// Package render turns a template and argument values into the prompt text
// clients receive, in the seed's format: a header from the metadata, then
// the sections in order, separated by "---". It is pure: no I/O, no clock,
// no logging, so prompts/get, the render tool and the CLI render alike.
package render

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/templates"
)

// MaxValueLength is the most characters (runes) one argument value may
// have, as the seed's data model sets.
const MaxValueLength = 10000

// Prompt renders t with args. See AppendPrompt.
func Prompt(t *templates.Template, args map[string]string) (string, error) {
	b, err := AppendPrompt(make([]byte, 0, sizeHint(t)), t, args)
	if err != nil || len(b) == 0 {
		return "", err
	}
	// b is never used again, so the string can share its memory (as
	// strings.Builder does) instead of copying up to 100 KB.
	return unsafe.String(&b[0], len(b)), nil
}

// AppendPrompt appends the rendered prompt to dst, building no intermediate
// strings.
//
// Values: an empty string counts as not given, for required and optional
// variables alike, because clients (the TypeScript SDK among them) send ""
// for fields the user left untouched. A missing required variable is a
// MISSING_REQUIRED_VARIABLE error naming every missing one; a missing
// optional one takes its default, else "". A value longer than
// MaxValueLength characters is INVALID_ARGUMENT. Arguments that name no
// variable are ignored (Unknown lists them), except that a placeholder the
// template forgot to define takes a same-named argument; without one it
// stays as written, so the author sees the slip.
//
// Substitution is a single pass over the compiled parts: a value containing
// "{{x}}" is copied as it is, never expanded again.
func AppendPrompt(dst []byte, t *templates.Template, args map[string]string) ([]byte, error) {
	if t == nil {
		return dst, fault.New(fault.Internal, "cannot render a nil template", "", "")
	}
	// Resolve each variable's value once: sections may use it many times.
	var small [16]string
	values := small[:0]
	if n := len(t.Variables); n > len(small) {
		values = make([]string, 0, n)
	}
	var missing []string
	for i := range t.Variables {
		v := &t.Variables[i]
		val, ok := args[v.Name]
		switch {
		case ok && val != "":
			if err := checkLength(v.Name, val); err != nil {
				return dst, err
			}
		case v.Required:
			missing = append(missing, v.Name)
		case v.Default != nil:
			val = *v.Default
		default:
			val = ""
		}
		values = append(values, val)
	}
	if len(missing) > 0 {
		return dst, missingError(t, missing)
	}
	sections := t.Sections()
	for _, s := range sections {
		for _, p := range s.Parts() {
			if p.Var < 0 && p.IsPlaceholder() {
				if val := args[p.Name]; val != "" {
					if err := checkLength(p.Name, val); err != nil {
						return dst, err
					}
				}
			}
		}
	}

	start := len(dst)
	md := &t.Metadata
	dst = append(dst, "# "...)
	dst = append(dst, md.Name...)
	dst = append(dst, "\n\n"...)
	dst = append(dst, md.Description...)
	dst = append(dst, "\n\n**Version**: "...)
	dst = append(dst, md.Version...)
	dst = append(dst, '\n')
	if len(md.Tags) > 0 {
		dst = append(dst, "**Tags**: "...)
		for i, tag := range md.Tags {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = append(dst, tag...)
		}
		dst = append(dst, '\n')
	}
	for i, s := range sections {
		if i == 0 {
			dst = append(dst, "\n---\n\n"...)
		} else {
			dst = append(dst, "\n\n---\n\n"...)
		}
		for _, p := range s.Parts() {
			switch {
			case p.Var >= 0:
				dst = append(dst, values[p.Var]...)
			case p.IsPlaceholder():
				if val := args[p.Name]; val != "" {
					dst = append(dst, val...)
				} else {
					dst = append(dst, p.Text...)
				}
			default:
				dst = append(dst, p.Text...)
			}
		}
	}
	// The seed trims the finished prompt; only its end can carry
	// whitespace (a section ending in a newline).
	return trimRightSpace(dst, start), nil
}

// Unknown returns the argument names, sorted, that name neither a variable
// nor a placeholder of t, so callers can warn about typos.
func Unknown(t *templates.Template, args map[string]string) []string {
	var out []string
	placeholders := t.Placeholders()
	for name := range args {
		if _, ok := t.Variable(name); ok {
			continue
		}
		if slices.Contains(placeholders, name) {
			continue
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

func checkLength(name, val string) error {
	// A string of at most MaxValueLength bytes cannot hold more runes.
	if len(val) <= MaxValueLength {
		return nil
	}
	n := utf8.RuneCountInString(val)
	if n <= MaxValueLength {
		return nil
	}
	return &fault.Error{
		Code: fault.InvalidArgument,
		What: fmt.Sprintf("argument %q is %d characters long, over the %d-character limit", name, n, MaxValueLength),
		Why:  "each value is limited so one argument cannot flood the prompt",
		How:  fmt.Sprintf("shorten %q to at most %d characters (summarise it, or pass only the relevant part)", name, MaxValueLength),
		Details: map[string]any{
			"variable":  name,
			"length":    n,
			"maxLength": MaxValueLength,
		},
	}
}

func missingError(t *templates.Template, missing []string) error {
	var how strings.Builder
	how.WriteString("pass a non-empty value for ")
	for i, name := range missing {
		if i > 0 {
			how.WriteString("; ")
		}
		how.WriteString(name)
		if v, ok := t.Variable(name); ok && v.Description != "" {
			how.WriteString(" (")
			how.WriteString(v.Description)
			how.WriteString(")")
		}
	}
	what := fmt.Sprintf("template %q needs %d required variables: %s", t.Metadata.Name, len(missing), strings.Join(missing, ", "))
	if len(missing) == 1 {
		what = fmt.Sprintf("template %q needs the required variable %s", t.Metadata.Name, missing[0])
	}
	return &fault.Error{
		Code:    fault.MissingRequiredVariable,
		What:    what,
		Why:     "required variables have no default, and an empty value counts as missing",
		How:     how.String(),
		Details: map[string]any{"missing": missing, "template": t.Metadata.Name},
	}
}

func trimRightSpace(b []byte, start int) []byte {
	for len(b) > start {
		r, size := utf8.DecodeLastRune(b[start:])
		if !unicode.IsSpace(r) {
			break
		}
		b = b[:len(b)-size]
	}
	return b
}

// sizeHint estimates the output size so Prompt allocates once in the common
// case: the template's text plus room for values.
func sizeHint(t *templates.Template) int {
	if t == nil {
		return 0
	}
	n := 64 + len(t.Metadata.Name) + len(t.Metadata.Description) + len(t.Metadata.Version)
	for _, tag := range t.Metadata.Tags {
		n += len(tag) + 2
	}
	for _, r := range t.Results {
		n += len(r.Content) + 8
	}
	return n + 256
}

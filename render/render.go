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
	var small [16]string
	values, size, err := resolve(t, args, small[:0])
	if err != nil {
		return "", err
	}
	b := write(make([]byte, 0, size), t, args, values)
	if len(b) == 0 {
		return "", nil
	}
	// b is never used again, so the string can share its memory (as
	// strings.Builder does) instead of copying up to 100 KB.
	return unsafe.String(&b[0], len(b)), nil
}

// AppendPrompt appends the rendered prompt to dst, building no intermediate
// strings. On error dst is returned unchanged.
//
// Values: an empty string counts as not given, for required and optional
// variables alike, because clients (the TypeScript SDK among them) send ""
// for fields the user left untouched. A missing required variable is a
// MISSING_REQUIRED_VARIABLE error naming every missing one; a missing
// optional one takes its default, else "" (a default on a required
// variable does not make it optional). A value longer than MaxValueLength
// characters is INVALID_ARGUMENT, reported after any missing variables.
// Arguments that name no variable are ignored (Unknown lists them), except
// that a placeholder the template forgot to define takes a same-named
// argument; without one it stays as written, so the author sees the slip.
//
// Substitution is a single pass over the compiled parts: a value containing
// "{{x}}" is copied as it is, never expanded again.
func AppendPrompt(dst []byte, t *templates.Template, args map[string]string) ([]byte, error) {
	var small [16]string
	values, _, err := resolve(t, args, small[:0])
	if err != nil {
		return dst, err
	}
	return write(dst, t, args, values), nil
}

// resolve checks args against t and returns each variable's value,
// resolved once because sections may use a value many times (appended to
// buf, which callers keep on their stack), and the exact size of the output
// before trimming, so Prompt allocates once.
func resolve(t *templates.Template, args map[string]string, buf []string) (values []string, size int, err error) {
	if t == nil {
		return nil, 0, fault.New(fault.Internal, "cannot render a nil template", "", "")
	}
	values = buf
	if n := len(t.Variables); n > cap(buf) {
		values = make([]string, 0, n)
	}
	var missing []string
	var tooLong error
	for i := range t.Variables {
		v := &t.Variables[i]
		val, ok := args[v.Name]
		switch {
		case ok && val != "":
			if err := checkLength(v.Name, val); err != nil && tooLong == nil {
				tooLong = err
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
	// Missing variables first: that error names every one of them.
	if len(missing) > 0 {
		return nil, 0, missingError(t, missing)
	}
	if tooLong != nil {
		return nil, 0, tooLong
	}
	md := &t.Metadata
	size = len("# \n\n\n\n**Version**: \n") + len(md.Name) + len(md.Description) + len(md.Version)
	if len(md.Tags) > 0 {
		size += len("**Tags**: \n")
		for _, tag := range md.Tags {
			size += len(tag) + len(", ")
		}
	}
	for _, s := range t.Sections() {
		size += len("\n\n---\n\n")
		for _, p := range s.Parts() {
			switch {
			case p.Var >= 0:
				size += len(values[p.Var])
			case p.IsPlaceholder():
				val := args[p.Name]
				if val == "" {
					size += len(p.Text)
					continue
				}
				if err := checkLength(p.Name, val); err != nil {
					return nil, 0, err
				}
				size += len(val)
			default:
				size += len(p.Text)
			}
		}
	}
	return values, size, nil
}

func write(dst []byte, t *templates.Template, args map[string]string, values []string) []byte {
	sections := t.Sections()
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
	return trimRightSpace(dst, start)
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

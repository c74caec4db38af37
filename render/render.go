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

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/internal/jsonstr"
	"github.com/flowyprompt/flowyprompt/templates"
)

// MaxValueLength is the most characters (runes) one argument value may
// have, as the seed's data model sets.
const MaxValueLength = 10000

// Prompt renders t with args. See AppendPrompt.
func Prompt(t *templates.Template, args map[string]string) (string, error) {
	var small [16]string
	values, size, _, err := resolve(t, args, small[:0])
	if err != nil {
		return "", err
	}
	return string(write(make([]byte, 0, size), t, args, values)), nil
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
	values, size, _, err := resolve(t, args, small[:0])
	if err != nil {
		return dst, err
	}
	// One allocation at most, rather than one per doubling.
	return write(slices.Grow(dst, size), t, args, values), nil
}

// resolve checks args against t and returns each variable's value,
// resolved once because sections may use a value many times (appended to
// buf, which callers keep on their stack), and what the callers need room
// for, so that they allocate once at most: the exact size of the output
// before trimming, and a lower bound of its JSON escaping (exact for the
// template's fixed text, whose escaping was computed when it was loaded;
// values and metadata counted as if nothing in them needed escaping).
func resolve(t *templates.Template, args map[string]string, buf []string) (values []string, size, jsonSize int, err error) {
	if t == nil {
		return nil, 0, 0, fault.New(fault.Internal, "cannot render a nil template", "", "")
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
		return nil, 0, 0, missingError(t, missing)
	}
	if tooLong != nil {
		return nil, 0, 0, tooLong
	}
	// What walk writes, piece by piece; the escaped fixed pieces are those
	// it passes along with them.
	md := &t.Metadata
	size = len("# \n\n\n\n**Version**: \n") + len(md.Name) + len(md.Description) + len(md.Version)
	jsonSize = len(`# \n\n\n\n**Version**: \n`) + len(md.Name) + len(md.Description) + len(md.Version)
	if len(md.Tags) > 0 {
		size += len("**Tags**: \n") + (len(md.Tags)-1)*len(", ")
		jsonSize += len(`**Tags**: \n`) + (len(md.Tags)-1)*len(", ")
		for _, tag := range md.Tags {
			size += len(tag)
			jsonSize += len(tag)
		}
	}
	for i, s := range t.Sections() {
		if i == 0 {
			size += len("\n---\n\n")
			jsonSize += len(`\n---\n\n`)
		} else {
			size += len("\n\n---\n\n")
			jsonSize += len(`\n\n---\n\n`)
		}
		for _, p := range s.Parts() {
			switch {
			case p.Var >= 0:
				size += len(values[p.Var])
				jsonSize += len(values[p.Var])
			case p.IsPlaceholder():
				val := args[p.Name]
				if val == "" {
					size += len(p.Text)
					jsonSize += len(p.JSON)
					continue
				}
				if err := checkLength(p.Name, val); err != nil {
					return nil, 0, 0, err
				}
				size += len(val)
				jsonSize += len(val)
			default:
				size += len(p.Text)
				jsonSize += len(p.JSON)
			}
		}
	}
	return values, size, jsonSize, nil
}

func write(dst []byte, t *templates.Template, args map[string]string, values []string) []byte {
	start := len(dst)
	walk(t, args, values, func(raw, _ string) { dst = append(dst, raw...) })
	// The seed trims the finished prompt; only its end can carry
	// whitespace (a section ending in a newline).
	return trimRightSpace(dst, start)
}

// AppendPromptJSON appends the rendered prompt to dst (as AppendPrompt),
// then the same text escaped for a JSON string, without quotes: the form a
// response carries it in. It returns the extended buffer and the prompt's
// length n: the prompt is out[len(dst):len(dst)+n], its escaping the rest.
// On error dst is returned unchanged.
//
// The template's fixed text was escaped when it was loaded
// (templates.Part.JSON), so only the values are escaped here; for a 2 KB
// prompt, escaping it whole costs more than rendering it.
func AppendPromptJSON(dst []byte, t *templates.Template, args map[string]string) (out []byte, n int, err error) {
	var small [16]string
	values, size, jsonSize, err := resolve(t, args, small[:0])
	if err != nil {
		return dst, 0, err
	}
	// Room for the text and its escaping, so that neither outgrows dst
	// (unless the values need escaping, which jsonSize does not count).
	dst = slices.Grow(dst, size+jsonSize)
	start := len(dst)
	out = write(dst, t, args, values)
	n = len(out) - start
	// Escaping goes rune by rune, so pieces escaped apart join into the
	// escaping of the whole, as long as each piece is valid UTF-8; left is
	// what remains of the trimmed text, so the trailing white space the
	// trim removed is not written.
	left, valid := n, true
	walk(t, args, values, func(raw, esc string) {
		switch {
		case left <= 0:
			return
		case len(raw) > left:
			raw, esc = raw[:left], ""
		}
		left -= len(raw)
		if esc == "" {
			valid = valid && utf8.ValidString(raw)
			out = jsonstr.AppendEscaped(out, raw)
			return
		}
		out = append(out, esc...)
	})
	if !valid {
		// Pieces of invalid UTF-8 may not join into the escaping of the
		// whole: escape the prompt again, whole, read where it was written.
		out = out[:start+n]
		out = jsonstr.AppendEscapedBytes(out, out[start:])
	}
	return out, n, nil
}

// walk hands put the rendered prompt piece by piece, untrimmed: each
// piece's text, and its JSON escaping when it is known in advance ("" when
// not, or when the piece is empty).
func walk(t *templates.Template, args map[string]string, values []string, put func(raw, esc string)) {
	md := &t.Metadata
	put("# ", "# ")
	put(md.Name, "")
	put("\n\n", `\n\n`)
	put(md.Description, "")
	put("\n\n**Version**: ", `\n\n**Version**: `)
	put(md.Version, "")
	put("\n", `\n`)
	if len(md.Tags) > 0 {
		put("**Tags**: ", "**Tags**: ")
		for i, tag := range md.Tags {
			if i > 0 {
				put(", ", ", ")
			}
			put(tag, "")
		}
		put("\n", `\n`)
	}
	for i, s := range t.Sections() {
		if i == 0 {
			put("\n---\n\n", `\n---\n\n`)
		} else {
			put("\n\n---\n\n", `\n\n---\n\n`)
		}
		for _, p := range s.Parts() {
			switch {
			case p.Var >= 0:
				put(values[p.Var], "")
			case p.IsPlaceholder():
				if val := args[p.Name]; val != "" {
					put(val, "")
				} else {
					put(p.Text, p.JSON)
				}
			default:
				put(p.Text, p.JSON)
			}
		}
	}
}

// Unknown returns the argument names, sorted, that name neither a variable
// nor a placeholder of t, so callers can warn about typos. It runs on every
// render, and allocates nothing when every argument names a variable.
func Unknown(t *templates.Template, args map[string]string) []string {
	var out []string
	// A name that is no variable can only match a placeholder no variable
	// defines. Those are gathered once an argument needs them, onto the
	// stack while they are few: most requests name only variables.
	var small [8]string
	var undefined []string
	gathered := false
	for name := range args {
		if _, ok := t.Variable(name); ok {
			continue
		}
		if !gathered {
			undefined, gathered = undefinedPlaceholders(t, small[:0]), true
		}
		if !slices.Contains(undefined, name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// undefinedPlaceholders appends to buf the names of t's placeholders that
// no variable defines, each once.
func undefinedPlaceholders(t *templates.Template, buf []string) []string {
	for _, s := range t.Sections() {
		for _, p := range s.Parts() {
			if p.IsPlaceholder() && p.Var < 0 && !slices.Contains(buf, p.Name) {
				buf = append(buf, p.Name)
			}
		}
	}
	return buf
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

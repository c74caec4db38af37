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
	"github.com/flowyprompt/flowyprompt/templates"
)

// MaxValueLength is the most characters (runes) one argument value may
// have, as the seed's data model sets.
const MaxValueLength = 10000

// Prompt renders t with args into the prompt text: the metadata and the
// results. A conversation template's messages are not part of it:
// Conversation renders them.
//
// Values: each is checked against its variable's type (ParseValue; a
// value that does not parse is INVALID_ARGUMENT), and a plain placeholder
// puts it as it was written, except a list, whose items it puts one per
// line. An empty string counts as not given, for required and optional
// variables alike, because clients (the TypeScript SDK among them) send ""
// for fields the user left untouched. A missing required variable is a
// MISSING_REQUIRED_VARIABLE error naming every missing one; a missing
// optional one takes its default, else "" (a default on a required
// variable does not make it optional). A value longer than MaxValueLength
// characters is INVALID_ARGUMENT, reported after any missing variables;
// so is a value outside the variable's enum (matched exactly), whose error
// names the allowed values.
// Arguments that name no variable are ignored (Unknown lists them), except
// that a placeholder the template forgot to define takes a same-named
// argument; without one it stays as written, so the author sees the slip.
//
// Substitution is a single pass over the compiled parts: a value containing
// "{{x}}" is copied as it is, never expanded again.
func Prompt(t *templates.Template, args map[string]string) (string, error) {
	var small [16]string
	values, size, pre, err := resolve(t, args, small[:0])
	if err != nil {
		return "", err
	}
	// Written once, at its size, into the string it is returned as. The
	// seed trims the finished prompt, and only its end can carry white
	// space (a section ending in a newline): the trimmed prompt is a
	// substring of it, not a copy.
	var b strings.Builder
	b.Grow(size)
	walk(t, args, values, pre, func(piece string) { b.WriteString(piece) })
	return strings.TrimRightFunc(b.String(), unicode.IsSpace), nil
}

// resolve checks args against t and returns each variable's value,
// resolved once because sections may use a value many times (appended to
// buf, which callers keep on their stack), and the exact size of the
// output before trimming, so that Prompt allocates once. The sections with
// logic are rendered here, into pre at their index (nil when none has).
func resolve(t *templates.Template, args map[string]string, buf []string) (values []string, size int, pre []string, err error) {
	if t == nil {
		return nil, 0, nil, fault.New(fault.Internal, "cannot render a nil template", "", "")
	}
	values = buf
	if n := len(t.Variables); n > cap(buf) {
		values = make([]string, 0, n)
	}
	var missing []string
	var tooLong, outside error
	for i := range t.Variables {
		v := &t.Variables[i]
		val, ok := args[v.Name]
		switch {
		case ok && val != "":
			if err := checkLength(v.Name, val); err != nil && tooLong == nil {
				tooLong = err
			}
			if outside == nil && (v.Type == templates.TypeString || v.Type == "") && len(v.Enum) > 0 && !slices.Contains(v.Enum, val) {
				outside = enumError(t, v, val)
			}
		case v.Required:
			missing = append(missing, v.Name)
		case v.Default != nil:
			val = *v.Default
		default:
			val = ""
		}
		if val != "" && outside == nil {
			// A typed value is checked, and a list put one item a line.
			var err error
			if val, err = typedValue(t, v, val); err != nil {
				outside = err
			}
		}
		values = append(values, val)
	}
	// Missing variables first: that error names every one of them.
	if len(missing) > 0 {
		return nil, 0, nil, missingError(t, missing)
	}
	if tooLong != nil {
		return nil, 0, nil, tooLong
	}
	if outside != nil {
		return nil, 0, nil, outside
	}
	room := MaxLogicSize
	if pre, err = renderLogic(t, t.Sections(), args, values, &room); err != nil {
		return nil, 0, nil, err
	}
	// What walk writes, piece by piece.
	md := &t.Metadata
	size = len("# \n\n\n\n**Version**: \n") + len(md.Name) + len(md.Description) + len(md.Version)
	if len(md.Tags) > 0 {
		size += len("**Tags**: \n") + (len(md.Tags)-1)*len(", ")
		for _, tag := range md.Tags {
			size += len(tag)
		}
	}
	for i, s := range t.Sections() {
		if i == 0 {
			size += len("\n---\n\n")
		} else {
			size += len("\n\n---\n\n")
		}
		if pre != nil && s.Logic() {
			size += len(pre[i])
			continue
		}
		n, err := sectionSize(s, args, values)
		if err != nil {
			return nil, 0, nil, err
		}
		size += n
	}
	return values, size, pre, nil
}

// sectionSize returns the size of s rendered, and checks the length of the
// arguments its undefined placeholders take (resolve checked the
// variables').
func sectionSize(s templates.Section, args map[string]string, values []string) (int, error) {
	size := 0
	for p := range s.All() {
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
				return 0, err
			}
			size += len(val)
		default:
			size += len(p.Text)
		}
	}
	return size, nil
}

// walk hands put the rendered prompt piece by piece, untrimmed; pre holds
// the sections with logic, rendered by resolve.
func walk(t *templates.Template, args map[string]string, values, pre []string, put func(piece string)) {
	md := &t.Metadata
	put("# ")
	put(md.Name)
	put("\n\n")
	put(md.Description)
	put("\n\n**Version**: ")
	put(md.Version)
	put("\n")
	if len(md.Tags) > 0 {
		put("**Tags**: ")
		for i, tag := range md.Tags {
			if i > 0 {
				put(", ")
			}
			put(tag)
		}
		put("\n")
	}
	for i, s := range t.Sections() {
		if i == 0 {
			put("\n---\n\n")
		} else {
			put("\n\n---\n\n")
		}
		if pre != nil && s.Logic() {
			put(pre[i])
			continue
		}
		walkSection(s, args, values, put)
	}
}

// walkSection hands put s rendered, piece by piece.
func walkSection(s templates.Section, args map[string]string, values []string, put func(piece string)) {
	for p := range s.All() {
		switch {
		case p.Var >= 0:
			put(values[p.Var])
		case p.IsPlaceholder():
			if val := args[p.Name]; val != "" {
				put(val)
			} else {
				put(p.Text)
			}
		default:
			put(p.Text)
		}
	}
}

// Message is one rendered turn of a conversation.
type Message struct {
	Role string `json:"role"` // templates.RoleUser or templates.RoleAssistant
	Text string `json:"text"`
}

// Conversation renders t with args into the messages a client is sent, in
// order: the results' text (what Prompt returns) as a user message when t
// has results, then each of t's messages with its placeholders filled in.
// The results come first because they are the prompt's framing (title,
// description, instructions) that the turns continue; a template without
// messages gives one user message, Prompt's text. Each message is trimmed
// at its end, as Prompt trims the prompt. Values are checked, and errors
// reported, as by Prompt.
func Conversation(t *templates.Template, args map[string]string) ([]Message, error) {
	var small [16]string
	values, size, pre, err := resolve(t, args, small[:0])
	if err != nil {
		return nil, err
	}
	turns := t.Turns()
	room := MaxLogicSize
	for i, s := range t.Sections() {
		if pre != nil && s.Logic() {
			room -= len(pre[i])
		}
	}
	preTurns, err := renderLogic(t, turns, args, values, &room)
	if err != nil {
		return nil, err
	}
	out := make([]Message, 0, len(turns)+1)
	if len(t.Sections()) > 0 {
		var b strings.Builder
		b.Grow(size)
		walk(t, args, values, pre, func(piece string) { b.WriteString(piece) })
		out = append(out, Message{Role: templates.RoleUser, Text: strings.TrimRightFunc(b.String(), unicode.IsSpace)})
	}
	for i, s := range turns {
		if preTurns != nil && s.Logic() {
			out = append(out, Message{Role: s.Name, Text: strings.TrimRightFunc(preTurns[i], unicode.IsSpace)})
			continue
		}
		n, err := sectionSize(s, args, values)
		if err != nil {
			return nil, err
		}
		var b strings.Builder
		b.Grow(n)
		walkSection(s, args, values, func(piece string) { b.WriteString(piece) })
		out = append(out, Message{Role: s.Name, Text: strings.TrimRightFunc(b.String(), unicode.IsSpace)})
	}
	return out, nil
}

// Transcript writes msgs as one text, for readers that take text rather
// than messages (the render tool, the command line): each message under a
// heading naming its role ("## User", "## Assistant"), separated by blank
// lines. Headings rather than a prefix on the first line, because a
// message is often several paragraphs of markdown.
func Transcript(msgs []Message) string {
	var b strings.Builder
	size := 0
	for _, m := range msgs {
		size += len("## Assistant\n\n\n\n") + len(m.Text)
	}
	b.Grow(size)
	for i, m := range msgs {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString("## ")
		b.WriteString(roleHeading(m.Role))
		b.WriteString("\n\n")
		b.WriteString(m.Text)
	}
	return b.String()
}

func roleHeading(role string) string {
	switch role {
	case templates.RoleUser:
		return "User"
	case templates.RoleAssistant:
		return "Assistant"
	}
	return role
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

// undefinedPlaceholders appends to buf the names of t's placeholders, in
// its sections and its messages, that no variable defines, each once.
func undefinedPlaceholders(t *templates.Template, buf []string) []string {
	for _, ss := range [][]templates.Section{t.Sections(), t.Turns()} {
		for _, s := range ss {
			for p := range s.All() {
				if p.IsPlaceholder() && p.Var < 0 && !slices.Contains(buf, p.Name) {
					buf = append(buf, p.Name)
				}
			}
		}
	}
	return buf
}

// CheckValue refuses a value of the variable or argument name longer than
// MaxValueLength, with the error Prompt gives for it: paths that pass
// values on (a flow's arguments) check them before they are copied.
func CheckValue(name, val string) error { return checkLength(name, val) }

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

// enumError refuses a value outside v's enum, naming the allowed values
// (and the one meant, when only its case differs or it is a prefix).
func enumError(t *templates.Template, v *templates.Variable, val string) error {
	var sugg []string
	low := strings.ToLower(val)
	for _, e := range v.Enum {
		if le := strings.ToLower(e); le == low || strings.HasPrefix(le, low) || strings.HasPrefix(low, le) {
			sugg = append(sugg, e)
		}
	}
	return &fault.Error{
		Code:        fault.InvalidArgument,
		What:        fmt.Sprintf("%q is not an allowed value of %s (template %q)", val, v.Name, t.Metadata.Name),
		Why:         fmt.Sprintf("%s takes one of a closed set of values (its enum): %s", v.Name, strings.Join(v.Enum, ", ")),
		How:         fmt.Sprintf("pass one of %s for %s, or leave it out to use the default", strings.Join(v.Enum, ", "), v.Name),
		Suggestions: sugg,
		Details:     map[string]any{"field": v.Name, "value": val, "allowed": v.Enum, "template": t.Metadata.Name},
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

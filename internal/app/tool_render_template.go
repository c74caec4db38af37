package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/internal/suggest"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/render"
	"github.com/flowyprompt/flowyprompt/templates"
)

// renderArgs are the render tool's arguments, the values in the string
// form every value travels in (argumentValues).
type renderArgs struct {
	Name      string
	Arguments map[string]string
	Version   string
}

// renderTemplate is the render tool: the template rendered with the
// arguments (asking the user for missing ones when the client can),
// within the result budget, with the resources it attaches.
func (a *App) renderTemplate(ctx context.Context, r *mcp.Request, in toolArgs) (*toolResult, error) {
	var args renderArgs
	if !renderArgsFrom(in.decoded, &args.Name, &args.Arguments, &args.Version) {
		// The quick check did not decode them (a list is beyond it):
		// numbers keep their digits as written.
		dec := json.NewDecoder(bytes.NewReader(in.raw))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil || !renderArgsFrom(m, &args.Name, &args.Arguments, &args.Version) {
			return nil, &fault.Error{Code: fault.InvalidArgument, What: "the arguments cannot be read", Err: err,
				Why: "name and version are strings, and arguments an object of values",
				How: "pass arguments as the tool's inputSchema describes them"}
		}
	}
	e, v, at, err := a.lookupAt(ctx, r, args.Name, args.Version)
	if err != nil {
		return nil, err
	}
	cat := v.cat
	t := e.Template
	unknown := render.Unknown(t, args.Arguments)
	if err := misspelt(t, unknown); err != nil {
		return nil, err
	}
	noteUsage(ctx, e, cat)
	text, conv, err := a.renderAsking(ctx, r, t, &args.Arguments, in.retry)
	if err != nil {
		return nil, err
	}
	a.remember(r, t, args.Arguments)
	used, defaults := echoArguments(t, args.Arguments)
	unknown = nonNilStrings(unknown)
	for i, u := range unknown {
		unknown[i] = truncateRunes(u, echoBudget)
	}
	note, extra := staleNote(cat)
	setExtra := func(k string, v any) {
		if extra == nil {
			extra = map[string]any{}
		}
		extra[k] = v
	}
	if at != nil {
		setExtra("at", at)
		note = "- " + describeAt(at) + "\n" + note
	}
	text, conv, cutNote, total := fitRendered(t, text, conv)
	if cutNote != "" {
		note = cutNote + note
		setExtra("truncated", true)
		setExtra("total_characters", total)
	}
	var attached []mcp.ResourceContents
	if len(t.Resources) > 0 {
		var listed []map[string]any
		attached, listed, note = a.attachWithin(ctx, v, t, runeCount(text)+len(note), note)
		setExtra("resources", listed)
	}
	report := renderReport(t, text, len(conv), len(used), defaults, unknown, note)
	if extra != nil {
		structured := map[string]any{"name": t.Metadata.Name, "text": text, "arguments_used": used, "defaults_applied": defaults, "unknown_arguments": unknown}
		if conv != nil {
			structured["messages"] = conv
		}
		for k, v := range extra {
			structured[k] = v
		}
		return &toolResult{text: report, structured: structured, resources: attached, view: v}, nil
	}
	return &toolResult{text: report,
		structured: (&rendered{Name: t.Metadata.Name, Text: text, Messages: conv, ArgumentsUsed: used, DefaultsApplied: defaults, UnknownArguments: unknown}).json(), view: v}, nil
}

// renderAsking renders t with *args; when required variables are missing
// and the client can show a form, it asks the user for them, and renders
// with *args merged with the answers.
func (a *App) renderAsking(ctx context.Context, r *mcp.Request, t *templates.Template, args *map[string]string, retry mcp.Retry) (
	string, []render.Message, error) {
	text, conv, err := renderText(t, *args)
	if f := fault.As(err); f != nil && f.Code == fault.MissingRequiredVariable {
		missing, _ := f.Details["missing"].([]string)
		merged, askErr := a.askForMissing(ctx, r, t, *args, missing, retry)
		switch {
		case askErr != nil:
			return "", nil, askErr
		case merged != nil:
			*args = merged
			text, conv, err = renderText(t, merged)
		}
	}
	return text, conv, err
}

// echoArguments are the values used, each cut to echoBudget (an echo,
// not the input again: the prompt has it), and the variables whose
// defaults applied.
func echoArguments(t *templates.Template, args map[string]string) (map[string]string, []string) {
	used := map[string]string{}
	defaults := []string{}
	for _, v := range t.Variables {
		if val, ok := args[v.Name]; ok && val != "" {
			used[v.Name] = truncateRunes(val, echoBudget)
		} else if v.Default != nil {
			defaults = append(defaults, v.Name)
		}
	}
	return used, defaults
}

// fitRendered keeps a rendered prompt within the result budget (TOOLS.md):
// a longer prompt is cut at a line, with a note saying where to get it
// whole, and its length in characters. Bytes bound characters from above,
// so most prompts are never counted. A conversation is carried three
// times (the report, structuredContent's text and its messages), so it has
// a third of the room rather than half; its messages are cut, and the
// transcript written again from what is left. The note is "" when nothing
// was cut.
func fitRendered(t *templates.Template, text string, conv []render.Message) (string, []render.Message, string, int) {
	budget := promptBudget
	if conv != nil {
		budget = conversationBudget
	}
	if len(text) <= budget || runeCount(text) <= budget {
		return text, conv, "", 0
	}
	total := runeCount(text)
	if conv != nil {
		conv = cutConversation(conv, budget)
		text = render.Transcript(conv)
	} else {
		text = cutPrompt(text, budget)
	}
	note := fmt.Sprintf("- ⚠️ Truncated: the prompt has %d characters, more than a tool result carries; these are the first %d. "+
		"Get it whole with prompts/get %s and the same arguments, or with `flowyprompt render %s`\n",
		total, runeCount(text), t.Metadata.Name, t.Metadata.Name)
	return text, conv, note, total
}

// misspelt refuses the arguments, among unknown (those that name no
// variable of t), that look like one of its variables ("langauge" for
// language): rendering without the value the call meant to give would
// quietly use the default, or ask for it. An argument like no variable is
// only named in the result, as the CLI's render warns of it.
func misspelt(t *templates.Template, unknown []string) error {
	if len(unknown) == 0 {
		return nil
	}
	names := make([]string, len(t.Variables))
	for i, v := range t.Variables {
		names[i] = v.Name
	}
	var what, renames, suggestions []string
	for _, u := range unknown {
		c := suggest.Close(u, names, 1)
		if len(c) == 0 {
			continue
		}
		u = truncateRunes(u, echoBudget)
		what = append(what, fmt.Sprintf("%s (did you mean %q?)", u, c[0]))
		renames = append(renames, fmt.Sprintf("%s to %s", quoteJSON(u), quoteJSON(c[0])))
		suggestions = append(suggestions, c[0])
	}
	if len(what) == 0 {
		return nil
	}
	return &fault.Error{Code: fault.InvalidArgument,
		What:        fmt.Sprintf("template %s has no variable %s", t.Metadata.Name, strings.Join(what, ", ")),
		Why:         "arguments are named after the template's variables, which are " + truncateRunes(strings.Join(names, ", "), listDescription),
		How:         fmt.Sprintf("rename %s in arguments and call flowyprompt_render_template again", strings.Join(renames, ", ")),
		Suggestions: suggestions,
		Details:     map[string]any{"field": "arguments", "variables": names}}
}

// renderText renders t with args for the render tool: the prompt text, or
// for a conversation template its messages and their transcript.
func renderText(t *templates.Template, args map[string]string) (string, []render.Message, error) {
	if len(t.Messages) == 0 {
		text, err := render.Prompt(t, args)
		return text, nil, err
	}
	conv, err := render.Conversation(t, args)
	if err != nil {
		return "", nil, err
	}
	return render.Transcript(conv), conv, nil
}

// cutConversation returns the messages that fit in max characters, the
// last of them cut (at a line, as cutPrompt cuts) when it does not fit
// whole. The headings between them are not counted: the report's margin
// holds them.
func cutConversation(conv []render.Message, max int) []render.Message {
	out := make([]render.Message, 0, len(conv))
	for _, m := range conv {
		n := runeCount(m.Text)
		if n <= max {
			out = append(out, m)
			max -= n
			continue
		}
		if max > 0 {
			out = append(out, render.Message{Role: m.Role, Text: cutPrompt(m.Text, max)})
		}
		break
	}
	return out
}

// attachWithin reads t's resources for the render tool and keeps those
// that fit in the result budget beside a prompt of used characters, in
// the order the template lists them. It returns them, their entries for
// structuredContent ({uri, mimeType, characters, included}), and note
// with a line naming what is attached and one for each resource left out.
func (a *App) attachWithin(ctx context.Context, v view, t *templates.Template, used int, note string) (
	[]mcp.ResourceContents, []map[string]any, string) {
	att := a.attachments(ctx, v, t)
	// The report around the prompt and the notes take at most this much.
	room := ResultBudget - used - 2000 - 300*len(att)
	var kept []mcp.ResourceContents
	var names, left []string
	listed := make([]map[string]any, 0, len(att))
	for _, at := range att {
		if at.err != nil {
			msg := truncateRunes(at.err.Error(), 200)
			left = append(left, fmt.Sprintf("- ⚠️ Not attached: %s cannot be read (%s); the prompt refers to it, so work without it and say so\n", at.uri, msg))
			listed = append(listed, map[string]any{"uri": at.uri, "included": false, "error": msg})
			continue
		}
		n := at.size()
		fits := n <= room
		if fits {
			room -= n
			kept = append(kept, at.contents)
			names = append(names, at.uri)
		} else {
			left = append(left, fmt.Sprintf("- ⚠️ Not attached: %s (%d characters) does not fit in this result; "+
				"read it with resources/read %s, or get the prompt with prompts/get %s\n", at.uri, n, at.uri, t.Metadata.Name))
		}
		listed = append(listed, map[string]any{"uri": at.uri, "mimeType": at.contents.MimeType, "characters": n, "included": fits})
	}
	if len(names) > 0 {
		note = "- Attached resources (after this text): " + strings.Join(names, ", ") + "\n" + note
	}
	return kept, listed, note + strings.Join(left, "")
}

// promptBudget is the most of a rendered prompt the render tool returns:
// the prompt is in the text and in structuredContent, and ResultBudget
// counts both, with room for the report around it.
const promptBudget = (ResultBudget - 10_000) / 2

// conversationBudget is promptBudget for a conversation, which the render
// tool's result carries three times: as the report's transcript, and in
// structuredContent as text and as messages.
const conversationBudget = (ResultBudget - 10_000) / 3

// echoBudget is the most characters of an argument the render tool echoes
// back in arguments_used (and of a name in unknown_arguments).
const echoBudget = 200

// cutPrompt returns the first max characters of text, ending at a line
// break when one falls in the last tenth of them.
func cutPrompt(text string, max int) string {
	n := 0
	for i := range text {
		if n == max {
			text = text[:i]
			break
		}
		n++
	}
	if nl := strings.LastIndexByte(text, '\n'); nl > len(text)-len(text)/10 {
		text = text[:nl]
	}
	return text
}

// renderReport builds the render tool's report: the prompt between a
// head and a tail. Built by hand, not with fmt: this is the hot tool.
// A conversation (messages > 0) is introduced as one: its transcript is
// not a single request.
func renderReport(t *templates.Template, text string, messages, used int, defaults, unknown []string, note string) string {
	var b strings.Builder
	b.Grow(len(text) + len(note) + 512)
	if messages > 0 {
		b.WriteString("## Result\nRendered conversation template ")
	} else {
		b.WriteString("## Result\nRendered template ")
	}
	b.WriteString(t.Metadata.Name)
	if t.Metadata.Version != "" {
		// A file of another format may give no version.
		b.WriteString(" v")
		b.WriteString(t.Metadata.Version)
	}
	b.WriteString(" (")
	if messages > 0 {
		b.WriteString(strconv.Itoa(messages))
		b.WriteString(" messages, ")
	}
	b.WriteString(strconv.Itoa(runeCount(text)))
	if messages > 0 {
		b.WriteString(" characters). Use the conversation below: its messages in order, each under a heading naming its role " +
			"(User or Assistant); structuredContent.messages has them one by one.\n\n<<<PROMPT\n")
	} else {
		b.WriteString(" characters). Use the prompt below as the user's request.\n\n<<<PROMPT\n")
	}
	b.WriteString(text)
	b.WriteString("\nPROMPT>>>\n\n## Metadata\n- Arguments used: ")
	b.WriteString(strconv.Itoa(used))
	b.WriteByte('\n')
	if len(defaults) > 0 {
		b.WriteString("- Defaults applied: ")
		b.WriteString(strings.Join(defaults, ", "))
		b.WriteByte('\n')
	}
	if len(unknown) > 0 {
		b.WriteString("- ⚠️ Ignored arguments that name no variable: ")
		b.WriteString(strings.Join(unknown, ", "))
		b.WriteByte('\n')
	}
	b.WriteString(note)
	// The tail always holds "- Arguments used", so trimming it trims the
	// whole report.
	return strings.TrimRight(b.String(), "\n")
}

// renderArgsFrom takes the render tool's arguments from the object the
// quick check decoded, when it did; it reports whether it could.
func renderArgsFrom(m map[string]any, name *string, values *map[string]string, version *string) bool {
	if m == nil {
		return false
	}
	n, ok := m["name"].(string)
	if !ok {
		return false
	}
	*name = n
	if v, present := m["version"]; present {
		if *version, ok = v.(string); !ok {
			return false
		}
	}
	raw, present := m["arguments"]
	if !present || raw == nil {
		return true
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return false
	}
	out, ok := argumentValues(obj)
	if !ok {
		return false
	}
	*values = out
	return true
}

// argumentValues turns a tool's JSON arguments into the string form
// values travel in, the form prompts/get's arguments have, so that one
// parser (render.ParseValue) reads both: a boolean as true or false, a
// number as written, a list as a JSON array. It reports false for a value
// that is none of those (an object; the input schema refuses them).
func argumentValues(obj map[string]any) (map[string]string, bool) {
	out := make(map[string]string, len(obj))
	for k, v := range obj {
		if v == nil {
			continue // not given
		}
		s, ok := templates.ValueText(v)
		if !ok {
			return nil, false
		}
		out[k] = s
	}
	return out, true
}

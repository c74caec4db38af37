package app

import (
	"encoding/json"
	"slices"

	"github.com/flowyprompt/flowyprompt/internal/jsonstr"
	"github.com/flowyprompt/flowyprompt/render"
)

// rendered is the render tool's structuredContent.
type rendered struct {
	ArgumentsUsed   map[string]string
	DefaultsApplied []string
	// Messages are a conversation template's; nil for others, and then
	// left out.
	Messages         []render.Message
	Name             string
	Text             string
	UnknownArguments []string
}

// json encodes r as the map of the other form of the render tool's
// structuredContent would be encoded (keys sorted, no HTML escaping), in
// one buffer with the strings escaped by jsonstr: the render tool is the
// hot tool, its payload is mostly one long string, and encoding/json's
// reflection and escaper took half its time.
func (r *rendered) json() json.RawMessage {
	n := len(r.Text)
	if r.Messages != nil {
		n *= 2 // the messages hold the transcript's text again
	}
	b := make([]byte, 0, n+n/8+256)
	b = append(b, `{"arguments_used":{`...)
	keys := make([]string, 0, len(r.ArgumentsUsed))
	for k := range r.ArgumentsUsed {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonstr.Append(b, k)
		b = append(b, ':')
		b = jsonstr.Append(b, r.ArgumentsUsed[k])
	}
	b = append(b, `},"defaults_applied":`...)
	b = appendStrings(b, r.DefaultsApplied)
	if r.Messages != nil {
		b = append(b, `,"messages":[`...)
		for i, m := range r.Messages {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"role":`...)
			b = jsonstr.Append(b, m.Role)
			b = append(b, `,"text":`...)
			b = jsonstr.Append(b, m.Text)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"name":`...)
	b = jsonstr.Append(b, r.Name)
	b = append(b, `,"text":`...)
	b = jsonstr.Append(b, r.Text)
	b = append(b, `,"unknown_arguments":`...)
	b = appendStrings(b, r.UnknownArguments)
	return append(b, '}')
}

func appendStrings(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonstr.Append(dst, s)
	}
	return append(dst, ']')
}

package export

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/flowyprompt/flowyprompt/render"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/goccy/go-yaml"
)

// Agent Skills' limits on SKILL.md's front matter.
const (
	maxSkillName        = 64
	maxSkillDescription = 1024
)

// SkillName is the Agent Skill name for a template name: lowercase
// letters, digits and single hyphens, at most 64 characters
// (Code_Review is code-review), as the skill's folder is named.
func SkillName(name string) string {
	var b strings.Builder
	hyphen := false
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			hyphen = false
		case !hyphen && b.Len() > 0:
			b.WriteByte('-')
			hyphen = true
		}
	}
	s := strings.TrimRight(b.String(), "-")
	if len(s) > maxSkillName {
		s = strings.TrimRight(s[:maxSkillName], "-")
	}
	if s == "" {
		s = "prompt"
	}
	return s
}

// skill writes t as an Agent Skill's SKILL.md: name and description in
// front matter; then what to ask the user for, variable by variable; then
// the template's instructions, with a placeholder for each answer.
func skill(t *templates.Template, name string) ([]byte, error) {
	desc := strings.Join(strings.Fields(t.Metadata.Description), " ")
	if desc == "" {
		desc = title(t)
	}
	if utf8.RuneCountInString(desc) > maxSkillDescription {
		desc = string([]rune(desc)[:maxSkillDescription-1]) + "…"
	}
	head, err := frontMatter(yaml.MapSlice{{Key: "name", Value: name}, {Key: "description", Value: desc}})
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString("---\n")
	b.Write(head)
	fmt.Fprintf(&b, "---\n\n# %s\n\n%s\n", title(t), t.Metadata.Description)

	b.WriteString("\n## What to ask the user for\n\n")
	if len(t.Variables) == 0 {
		b.WriteString("Nothing: the instructions below are complete as they are.\n")
	} else {
		b.WriteString("Before following the instructions, ask the user for each value below that the conversation " +
			"has not already given, then put each answer where its {{name}} appears.\n\n")
	}
	for _, v := range t.Variables {
		fmt.Fprintf(&b, "- **%s**", v.Name)
		switch {
		case v.Required:
			b.WriteString(" (required)")
		case v.Default != nil:
			fmt.Fprintf(&b, " (optional; if not given, use %q)", *v.Default)
		default:
			b.WriteString(" (optional; if not given, leave it out)")
		}
		if v.Description != "" {
			fmt.Fprintf(&b, ": %s", strings.Join(strings.Fields(v.Description), " "))
		}
		if v.Type != "" && v.Type != templates.TypeString {
			fmt.Fprintf(&b, " (%s)", typeWords(v.Type))
		}
		if len(v.Enum) > 0 {
			fmt.Fprintf(&b, " One of: %s.", strings.Join(v.Enum, ", "))
		}
		if len(v.Examples) > 0 {
			fmt.Fprintf(&b, " For example: %s.", strings.Join(v.Examples, "; "))
		}
		b.WriteString("\n")
	}

	b.WriteString("\n## Instructions\n\n")
	msgs := Messages(t)
	if len(msgs) == 1 && msgs[0].Role == templates.RoleUser {
		b.WriteString(msgs[0].Content)
	} else {
		// A conversation keeps its turns, each under its role.
		turns := make([]render.Message, len(msgs))
		for i, m := range msgs {
			turns[i] = render.Message{Role: m.Role, Text: m.Content}
		}
		b.WriteString(render.Transcript(turns))
	}
	b.WriteString("\n")
	return []byte(b.String()), nil
}

func typeWords(typ string) string {
	switch typ {
	case templates.TypeBoolean:
		return "yes or no"
	case templates.TypeNumber:
		return "a number"
	case templates.TypeInteger:
		return "a whole number"
	case templates.TypeArray:
		return "a list"
	}
	return typ
}

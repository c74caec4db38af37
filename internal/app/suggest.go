package app

import (
	"slices"
	"strings"
	"unicode"

	"github.com/flowyprompt/flowyprompt/templates"
)

// vocabulary lists the catalog's categories, its tags, and the words of
// template and variable names, for suggestions.
func vocabulary(cat *templates.Catalog) (categories, tags, words []string) {
	split := func(s string) []string {
		return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	}
	for _, e := range cat.Templates() {
		m := e.Template.Metadata
		if m.Category != "" {
			categories = append(categories, m.Category)
			words = append(words, split(m.Category)...)
		}
		tags = append(tags, m.Tags...)
		for _, tag := range m.Tags {
			words = append(words, split(tag)...)
		}
		words = append(words, split(m.Name)...)
		for _, v := range e.Template.Variables {
			words = append(words, split(v.Name)...)
		}
	}
	for _, s := range []*[]string{&categories, &tags, &words} {
		slices.Sort(*s)
		*s = slices.Compact(*s)
	}
	return categories, tags, words
}

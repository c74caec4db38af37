// The filters the list and search tools share.

package app

import (
	"strings"
	"time"

	"github.com/flowyprompt/flowyprompt/templates"
)

// hasTag reports whether tags holds tag, in any case.
func hasTag(tags []string, tag string) bool {
	for _, t := range tags {
		if strings.EqualFold(t, tag) {
			return true
		}
	}
	return false
}

// selection is the filters the list and search tools share.
type selection struct {
	category, tag string
	since         time.Time // zero: any lastUpdated, or none
}

// newSelection reads the filters; an updated_since it cannot read is an
// error naming the forms it takes.
func newSelection(category, tag, updatedSince string) (selection, error) {
	sel := selection{category: category, tag: tag}
	if updatedSince != "" {
		var err error
		if sel.since, err = parseSince(updatedSince, time.Now()); err != nil {
			return selection{}, err
		}
	}
	return sel, nil
}

// admits reports whether t passes every filter.
func (s selection) admits(t *templates.Template) bool {
	m := t.Metadata
	return (s.category == "" || strings.EqualFold(m.Category, s.category)) &&
		(s.tag == "" || hasTag(m.Tags, s.tag)) && updatedSince(t, s.since)
}

// entries are the templates of cat that s admits, in the catalog's order.
func (s selection) entries(cat *templates.Catalog) []*templates.Entry {
	var out []*templates.Entry
	for _, e := range cat.Templates() {
		if s.admits(e.Template) {
			out = append(out, e)
		}
	}
	return out
}

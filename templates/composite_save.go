package templates

import (
	"context"
	"fmt"
	"strings"

	"github.com/flowyprompt/flowyprompt/internal/fault"
)

// saver is a source that saves template files: the folder source writes
// one, the GitHub source proposes it as a pull request.
type saver interface {
	SaveTemplate(ctx context.Context, name string, data []byte, message string) (Saved, error)
}

// Saves lists the namespaces of the members that can save templates, in
// precedence order; none when no member can (the built-in examples alone).
func (c *Composite) Saves() []string {
	var out []string
	for _, m := range c.members {
		if _, ok := m.Source.(saver); ok {
			out = append(out, m.Namespace)
		}
	}
	return out
}

// CanSave says whether the member namespace names can save templates: nil
// when it can, WRITE_DISABLED naming it when its source cannot (the
// built-in examples), INVALID_ARGUMENT listing the members when no member
// has that namespace.
func (c *Composite) CanSave(namespace string) error {
	_, err := c.saverOf(namespace)
	return err
}

func (c *Composite) saverOf(namespace string) (saver, error) {
	m, ok := c.named(namespace)
	if !ok {
		return nil, &fault.Error{Code: fault.InvalidArgument, What: fmt.Sprintf("no source is named %.64q", namespace),
			Why: "the sources of this server are " + strings.Join(c.namespaces(), ", "),
			How: savesHow(c.Saves())}
	}
	s, ok := m.Source.(saver)
	if !ok {
		return nil, &fault.Error{Code: fault.WriteDisabled, What: fmt.Sprintf("the source %s cannot save templates", namespace),
			Why: "it is " + m.Source.Info().Kind + ", which is read-only",
			How: savesHow(c.Saves())}
	}
	return s, nil
}

// savesHow says where to save instead: the members that can.
func savesHow(saves []string) string {
	if len(saves) == 0 {
		return "serve a template folder or a GitHub repository as a --source to save templates"
	}
	return "save to one of the sources that can: " + strings.Join(saves, ", ")
}

func (c *Composite) namespaces() []string {
	out := make([]string, len(c.members))
	for i, m := range c.members {
		out[i] = m.Namespace
	}
	return out
}

// SaveTemplate saves the template NAMESPACE/NAME to the member NAMESPACE
// names, as that member's NAME: the namespace picks the source, the file
// keeps the template's bare metadata.name, and data is passed on
// unchanged. The Saved is the member's.
func (c *Composite) SaveTemplate(ctx context.Context, name string, data []byte, message string) (Saved, error) {
	ns, bare, ok := strings.Cut(name, NamespaceSeparator)
	if !ok || bare == "" {
		return Saved{}, &fault.Error{Code: fault.InvalidArgument, What: fmt.Sprintf("%.64q names no source to save to", name),
			Why: "this server serves several sources, and a save goes to one of them",
			How: "name it as NAMESPACE/NAME; " + savesHow(c.Saves())}
	}
	s, err := c.saverOf(ns)
	if err != nil {
		return Saved{}, err
	}
	return s.SaveTemplate(ctx, bare, data, message)
}

package templates

import (
	"fmt"
	"strconv"

	"github.com/goccy/go-yaml"
)

// knownPromptYML are the keys of GitHub Models' .prompt.yml files.
var knownPromptYML = []string{"name", "description", "model", "modelParameters", "messages", "testData", "evaluators",
	"responseFormat", "jsonSchema"}

// readPromptYML reads a GitHub Models .prompt.yml file: name (the title),
// description, model, modelParameters, messages with {{variable}}
// placeholders, testData (tests with no expectation) and evaluators (their
// names: they judge a model's output, which is never produced here).
func (r *formatReader) readPromptYML(data []byte) {
	doc, p := parseYAML(data, 1)
	if p != nil {
		r.problems = append(r.problems, *p)
		return
	}
	r.doc = doc
	r.warnUnknown(knownPromptYML, nil)
	t := r.t
	t.Metadata.Title = r.str("name")
	t.Metadata.Description = r.str("description")
	params, _ := get(doc.value, "modelParameters")
	if _, ok := params.(yaml.MapSlice); params != nil && !ok {
		r.fail("/modelParameters", 0, "modelParameters must be a mapping (temperature: 0.5, …)")
	}
	t.Model = modelOf(r.str("model"), params)

	msgs, ok := get(doc.value, "messages")
	list, isList := msgs.([]any)
	switch {
	case !ok:
		r.fail("/messages", 0, "required field \"messages\" is missing: list the prompt's messages, each with a role and content")
	case !isList:
		r.fail("/messages", 0, "messages must be a list of {role, content}")
	}
	for i, m := range list {
		ptr := "/messages/" + strconv.Itoa(i)
		mm, ok := m.(yaml.MapSlice)
		if !ok {
			r.fail(ptr, 0, "a message must be a mapping with role and content")
			continue
		}
		role, _ := get(mm, "role")
		content, _ := get(mm, "content")
		rs, rok := role.(string)
		cs, cok := content.(string)
		switch {
		case !rok:
			r.fail(ptr+"/role", 0, "the message needs a role: system, user or assistant")
		case !cok:
			r.fail(ptr+"/content", 0, "the message needs its content as text")
		default:
			r.msgs = append(r.msgs, formatMessage{role: rs, content: cs, pointer: ptr, line: doc.line(ptr + "/content")})
		}
	}

	if rows, ok := get(doc.value, "testData"); ok && rows != nil {
		list, ok := rows.([]any)
		if !ok {
			r.fail("/testData", 0, "testData must be a list of rows, each mapping variables to values")
		}
		for i, row := range list {
			m, ok := row.(yaml.MapSlice)
			if !ok {
				r.fail("/testData/"+strconv.Itoa(i), 0, "a testData row must map variable names to values")
				continue
			}
			t.Tests = append(t.Tests, Test{Name: fmt.Sprintf("testData %d", i+1), Arguments: testArguments(m)})
		}
	}
	if evs, ok := get(doc.value, "evaluators"); ok && evs != nil {
		list, ok := evs.([]any)
		if !ok {
			r.fail("/evaluators", 0, "evaluators must be a list, each with a name")
		}
		for i, ev := range list {
			m, _ := ev.(yaml.MapSlice)
			name, _ := get(m, "name")
			s, ok := name.(string)
			if !ok || s == "" {
				r.fail("/evaluators/"+strconv.Itoa(i), 0, "an evaluator needs a name")
				continue
			}
			t.Evaluators = append(t.Evaluators, s)
		}
	}
}

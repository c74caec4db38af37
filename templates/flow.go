package templates

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/xeipuuv/gojsonschema"
)

// Flow is an ordered plan of templates: each step renders one template
// with variables taken from the flow's arguments and from the outputs of
// the steps before it. A parsed Flow is shared by every reader of a
// catalog: treat it as read-only.
type Flow struct {
	Name        string     `json:"name"`
	Description string     `json:"description"`
	Arguments   []FlowArg  `json:"arguments,omitempty"`
	Steps       []FlowStep `json:"steps"`
}

// FlowArg is one string input of a flow.
type FlowArg struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Required    bool   `json:"required,omitempty"`
}

// FlowStep renders Template with Variables, whose values may hold
// {{argument}} and {{steps.NAME.output}} references.
type FlowStep struct {
	Name      string            `json:"name"`
	Template  string            `json:"template"`
	Variables map[string]string `json:"variables,omitempty"`
}

// FlowEntry is one valid flow with where it came from.
type FlowEntry struct {
	Flow *Flow
	Path string
	// Digest is the hex SHA-256 of the file: a handle minted for one
	// version of a flow is refused by another.
	Digest string
}

//go:embed flow.schema.json
var flowSchemaJSON []byte

// flowSchema is compiled once, like the template schema.
var flowSchema = func() *gojsonschema.Schema {
	s, err := gojsonschema.NewSchema(gojsonschema.NewBytesLoader(flowSchemaJSON))
	if err != nil {
		panic("templates: embedded flow.schema.json does not compile: " + err.Error())
	}
	return s
}()

// IsFlowPath says whether a source file is a flow rather than a template:
// flows live in a folder named "flows", so one templates folder (or
// repository) holds both and neither is parsed as the other.
func IsFlowPath(p string) bool { return path.Base(path.Dir(p)) == "flows" }

// flowRef matches a reference in a step's variable value.
var flowRef = regexp.MustCompile(`\{\{\s*([^{}\s]+)\s*\}\}`)

// stepOutputRef reads "steps.NAME.output".
func stepOutputRef(ref string) (string, bool) {
	rest, ok := strings.CutPrefix(ref, "steps.")
	if !ok {
		return "", false
	}
	name, ok := strings.CutSuffix(rest, ".output")
	return name, ok && name != ""
}

// ParseFlow decodes and validates one flow file against its schema and
// against the templates of lookup: every step names a template that
// exists, maps only variables that template has, gives every required
// variable without a default a value, and refers only to the flow's
// arguments and to earlier steps. An invalid flow gives a *fault.Error
// (INVALID_TEMPLATE, like a template's) whose problems Problems returns.
func ParseFlow(data []byte, file string, maxSize int, lookup func(string) (*Entry, bool)) (*Flow, error) {
	if maxSize <= 0 {
		maxSize = DefaultMaxFileSize
	}
	if len(data) > maxSize {
		return nil, TooLarge(file, int64(len(data)), int64(maxSize))
	}
	doc, err := decodeDocument(data)
	if err != nil {
		return nil, invalidFlow(file, []Problem{{Message: err.Error()}}, err)
	}
	res, err := flowSchema.Validate(gojsonschema.NewRawLoader(doc))
	if err != nil {
		return nil, invalidFlow(file, []Problem{{Message: err.Error()}}, err)
	}
	var problems []Problem
	for _, e := range res.Errors() {
		problems = append(problems, Problem{Pointer: contextPointer(e.Context()), Message: e.Description()})
	}
	if len(problems) > 0 {
		return nil, invalidFlow(file, problems, nil)
	}
	var f Flow
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, invalidFlow(file, []Problem{{Message: err.Error()}}, err)
	}
	if problems := flowProblems(&f, lookup); len(problems) > 0 {
		return nil, invalidFlow(file, problems, nil)
	}
	return &f, nil
}

// flowProblems checks what the schema cannot: names against names.
func flowProblems(f *Flow, lookup func(string) (*Entry, bool)) []Problem {
	var problems []Problem
	add := func(pointer, format string, a ...any) {
		problems = append(problems, Problem{Pointer: pointer, Message: fmt.Sprintf(format, a...)})
	}
	args := map[string]bool{}
	for i, a := range f.Arguments {
		if args[a.Name] {
			add(fmt.Sprintf("/arguments/%d/name", i), "duplicate argument %q", a.Name)
		}
		args[a.Name] = true
	}
	// all knows every step, so a reference to a later step is told apart
	// from one to no step at all.
	all := map[string]int{}
	for i, s := range f.Steps {
		if _, dup := all[s.Name]; !dup {
			all[s.Name] = i
		}
	}
	seen := map[string]bool{}
	for i, s := range f.Steps {
		at := fmt.Sprintf("/steps/%d", i)
		if seen[s.Name] {
			add(at+"/name", "duplicate step name %q", s.Name)
		}
		e, ok := lookup(s.Template)
		if !ok {
			add(at+"/template", "no template named %q", s.Template)
		}
		for _, name := range sortedKeys(s.Variables) {
			vp := at + "/variables/" + escapePointer(name)
			if ok {
				if _, has := e.Template.Variable(name); !has {
					add(vp, "template %s has no variable %q", s.Template, name)
				}
			}
			for _, m := range flowRef.FindAllStringSubmatch(s.Variables[name], -1) {
				ref := m[1]
				if step, isStep := stepOutputRef(ref); isStep {
					switch j, exists := all[step]; {
					case !exists:
						add(vp, "refers to unknown step %q", step)
					case j >= i:
						add(vp, "refers to step %q, which does not run before this one", step)
					}
				} else if !args[ref] {
					add(vp, "refers to %q, which is neither an argument of the flow nor steps.NAME.output", ref)
				}
			}
		}
		if ok {
			for _, v := range e.Template.Variables {
				if _, mapped := s.Variables[v.Name]; !mapped && v.Required && v.Default == nil {
					add(at+"/variables", "template %s requires variable %q, which the step does not set", s.Template, v.Name)
				}
			}
		}
		seen[s.Name] = true
	}
	return problems
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// StepVariables is the variables of step i, its references replaced by
// args and by outputs (the outputs of steps 0..i-1, in order). An
// argument not given becomes the empty string, as an optional template
// variable does.
func (f *Flow) StepVariables(i int, args map[string]string, outputs []string) map[string]string {
	out := make(map[string]string, len(f.Steps[i].Variables))
	for name, value := range f.Steps[i].Variables {
		out[name] = flowRef.ReplaceAllStringFunc(value, func(m string) string {
			ref := flowRef.FindStringSubmatch(m)[1]
			if step, ok := stepOutputRef(ref); ok {
				if j := f.stepIndex(step); j >= 0 && j < len(outputs) {
					return outputs[j]
				}
				return ""
			}
			return args[ref]
		})
	}
	return out
}

// Needed says, for each step before step from, whether step from or a
// later one refers to its output: a caller that carries outputs can drop
// the others.
func (f *Flow) Needed(from int) []bool {
	needed := make([]bool, min(from, len(f.Steps)))
	for _, s := range f.Steps[min(from, len(f.Steps)):] {
		for _, value := range s.Variables {
			for _, m := range flowRef.FindAllStringSubmatch(value, -1) {
				if step, ok := stepOutputRef(m[1]); ok {
					if j := f.stepIndex(step); j >= 0 && j < len(needed) {
						needed[j] = true
					}
				}
			}
		}
	}
	return needed
}

// stepIndex is the index of the step named name, -1 if none. A flow has a
// handful of steps with unique names (ParseFlow checks): a scan is cheaper
// than building a map on every call, and leaves no index to keep in step
// with Steps when a Flow is copied (namespacedFlow) or written by hand.
func (f *Flow) stepIndex(name string) int {
	return slices.IndexFunc(f.Steps, func(s FlowStep) bool { return s.Name == name })
}

func invalidFlow(file string, problems []Problem, cause error) *fault.Error {
	err := invalid(file, problems, cause)
	err.What = strings.Replace(err.What, "template", "flow", 1)
	return err
}

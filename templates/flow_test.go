package templates

import (
	"fmt"
	"strings"
	"testing"
)

// flowTemplate is a minimal valid template with the given variables, the
// first of them required.
func flowTemplate(name string, vars ...string) File {
	var vs, body []string
	for i, v := range vars {
		vs = append(vs, fmt.Sprintf(`{"name":%q,"type":"string","description":"d","required":%t}`, v, i == 0))
		body = append(body, "{{"+v+"}}")
	}
	return File{Path: name + ".json", Data: []byte(fmt.Sprintf(
		`{"metadata":{"name":%q,"version":"1.0.0","description":"d"},"variables":[%s],"results":[{"name":"r","content":"%s: %s"}]}`,
		name, strings.Join(vs, ","), name, strings.Join(body, " ")))}
}

func flowFile(name, steps string) File {
	return File{Path: "flows/" + name + ".json", Data: []byte(fmt.Sprintf(
		`{"name":%q,"description":"d","arguments":[{"name":"topic","description":"t","required":true}],"steps":%s}`, name, steps))}
}

func TestBuildFlows(t *testing.T) {
	base := []File{flowTemplate("outline", "subject"), flowTemplate("draft", "outline", "tone")}
	tests := []struct {
		name      string
		flow      File
		wantValid bool
		wantMsg   string // in the problem, when invalid
		wantPtr   string
	}{
		{"valid", flowFile("f", `[{"name":"a","template":"outline","variables":{"subject":"{{topic}}"}},
			{"name":"b","template":"draft","variables":{"outline":"{{ steps.a.output }}","tone":"dry"}}]`), true, "", ""},
		{"missing template", flowFile("f", `[{"name":"a","template":"nope","variables":{"subject":"{{topic}}"}}]`),
			false, `no template named "nope"`, "/steps/0/template"},
		{"unknown variable", flowFile("f", `[{"name":"a","template":"outline","variables":{"subject":"x","colour":"y"}}]`),
			false, `has no variable "colour"`, "/steps/0/variables/colour"},
		{"later step", flowFile("f", `[{"name":"a","template":"outline","variables":{"subject":"{{steps.b.output}}"}},
			{"name":"b","template":"outline","variables":{"subject":"x"}}]`), false, "does not run before", "/steps/0/variables/subject"},
		{"own step", flowFile("f", `[{"name":"a","template":"outline","variables":{"subject":"{{steps.a.output}}"}}]`),
			false, "does not run before", "/steps/0/variables/subject"},
		{"unknown step", flowFile("f", `[{"name":"a","template":"outline","variables":{"subject":"{{steps.zz.output}}"}}]`),
			false, `unknown step "zz"`, "/steps/0/variables/subject"},
		{"unknown argument", flowFile("f", `[{"name":"a","template":"outline","variables":{"subject":"{{subjekt}}"}}]`),
			false, `"subjekt", which is neither`, "/steps/0/variables/subject"},
		{"required variable unset", flowFile("f", `[{"name":"a","template":"draft","variables":{"tone":"x"}}]`),
			false, `requires variable "outline"`, "/steps/0/variables"},
		{"duplicate step", flowFile("f", `[{"name":"a","template":"outline","variables":{"subject":"x"}},
			{"name":"a","template":"outline","variables":{"subject":"x"}}]`), false, `duplicate step name "a"`, "/steps/1/name"},
		{"schema: no steps", flowFile("f", `[]`), false, "", "/steps"},
		{"schema: unknown key", File{Path: "flows/f.json", Data: []byte(`{"name":"f","description":"d","steps":[{"name":"a","template":"outline"}],"stepz":1}`)},
			false, "", ""},
		{"not JSON", File{Path: "flows/f.json", Data: []byte(`{`)}, false, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Build(append(base, tt.flow), BuildOptions{})
			if c.Len() != 2 {
				t.Fatalf("templates = %d, want 2 (a flow file must not be parsed as a template); invalid: %v", c.Len(), c.Invalid())
			}
			_, ok := c.LookupFlow("f")
			if ok != tt.wantValid {
				t.Fatalf("flow valid = %t, want %t; invalid: %v", ok, tt.wantValid, c.Invalid())
			}
			if tt.wantValid {
				if len(c.Invalid()) != 0 {
					t.Fatalf("invalid = %v, want none", c.Invalid())
				}
				return
			}
			inv := c.Invalid()
			if len(inv) != 1 || inv[0].Path != "flows/f.json" {
				t.Fatalf("invalid = %v, want flows/f.json alone", inv)
			}
			if !strings.Contains(inv[0].Err.Error(), "flow file flows/f.json") {
				t.Errorf("error %q does not name the flow file", inv[0].Err)
			}
			ps := Problems(inv[0].Err)
			if len(ps) == 0 {
				t.Fatalf("no problems in %v", inv[0].Err)
			}
			if tt.wantPtr != "" && ps[0].Pointer != tt.wantPtr {
				t.Errorf("pointer = %q, want %q (%v)", ps[0].Pointer, tt.wantPtr, ps)
			}
			if !strings.Contains(ps[0].Message, tt.wantMsg) {
				t.Errorf("message = %q, want it to contain %q", ps[0].Message, tt.wantMsg)
			}
		})
	}
}

func TestBuildFlowsDuplicateName(t *testing.T) {
	steps := `[{"name":"a","template":"outline","variables":{"subject":"x"}}]`
	second := flowFile("f", steps)
	second.Path = "flows/g.json"
	c := Build([]File{flowTemplate("outline", "subject"), flowFile("f", steps), second}, BuildOptions{})
	if len(c.Flows()) != 1 || c.Flows()[0].Path != "flows/f.json" {
		t.Fatalf("flows = %v, want flows/f.json alone", c.Flows())
	}
	if inv := c.Invalid(); len(inv) != 1 || inv[0].Path != "flows/g.json" || !strings.Contains(inv[0].Err.Error(), "duplicate name") {
		t.Fatalf("invalid = %v, want flows/g.json as a duplicate", inv)
	}
}

func TestStepVariables(t *testing.T) {
	f := &Flow{Steps: []FlowStep{
		{Name: "a", Variables: map[string]string{"x": "{{topic}}!"}},
		{Name: "b", Variables: map[string]string{"y": "[{{steps.a.output}}] on {{ topic }}", "z": "{{missing}}"}},
	}}
	tests := []struct {
		step    int
		outputs []string
		want    map[string]string
	}{
		{0, nil, map[string]string{"x": "go!"}},
		{1, []string{"OUT {{topic}}"}, map[string]string{"y": "[OUT {{topic}}] on go", "z": ""}},
	}
	for _, tt := range tests {
		got := f.StepVariables(tt.step, map[string]string{"topic": "go"}, tt.outputs)
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("step %d: got %v, want %v", tt.step, got, tt.want)
		}
	}
}

func TestNeeded(t *testing.T) {
	f := &Flow{Steps: []FlowStep{
		{Name: "a"},
		{Name: "b", Variables: map[string]string{"x": "{{steps.a.output}}"}},
		{Name: "c", Variables: map[string]string{"x": "{{steps.a.output}} {{steps.b.output}}"}},
		{Name: "d", Variables: map[string]string{"x": "{{steps.c.output}}"}},
	}}
	tests := []struct {
		from int
		want string
	}{
		{0, "[]"},
		{1, "[true]"},
		{2, "[true true]"},
		{3, "[false false true]"},
		{4, "[false false false false]"},
		{9, "[false false false false]"},
	}
	for _, tt := range tests {
		if got := fmt.Sprint(f.Needed(tt.from)); got != tt.want {
			t.Errorf("Needed(%d) = %s, want %s", tt.from, got, tt.want)
		}
	}
}

// FuzzParseFlow: any bytes give a flow or an INVALID_TEMPLATE error, never
// a panic; a flow that parses resolves every step's references to the
// arguments and the outputs before it, and Needed covers those steps.
func FuzzParseFlow(f *testing.F) {
	cat := Build([]File{flowTemplate("outline", "subject"), flowTemplate("draft", "outline", "tone")}, BuildOptions{})
	f.Add(flowFile("f", `[{"name":"a","template":"outline","variables":{"subject":"{{topic}}"}},
		{"name":"b","template":"draft","variables":{"outline":"{{ steps.a.output }}","tone":"{{topic}} {{steps.a.output}}"}}]`).Data)
	f.Add([]byte(`{"name":"x","description":"d","steps":[{"name":"a","template":"outline","variables":{"subject":"{{steps.a.output}}"}}]}`))
	f.Add([]byte(`{"name":"x","steps":[]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fl, err := ParseFlow(data, "flows/f.json", 0, cat.Lookup)
		if err != nil {
			if len(Problems(err)) == 0 && !strings.Contains(err.Error(), "too large") {
				t.Fatalf("error without problems: %v", err)
			}
			return
		}
		args := map[string]string{}
		for _, a := range fl.Arguments {
			args[a.Name] = "ARG"
		}
		outputs := make([]string, len(fl.Steps))
		for i := range fl.Steps {
			outputs[i] = fmt.Sprintf("OUT%d", i)
		}
		for i, s := range fl.Steps {
			vars := fl.StepVariables(i, args, outputs[:i])
			if len(vars) != len(s.Variables) {
				t.Fatalf("step %d: %d variables, want %d", i, len(vars), len(s.Variables))
			}
			for name, v := range vars {
				for j := i; j < len(fl.Steps); j++ {
					if strings.Contains(v, fmt.Sprintf("OUT%d", j)) && !strings.Contains(s.Variables[name], fmt.Sprintf("OUT%d", j)) {
						t.Fatalf("step %d: %s got the output of step %d, which has not run", i, name, j)
					}
				}
			}
			if n := len(fl.Needed(i)); n != i {
				t.Fatalf("Needed(%d) covers %d steps", i, n)
			}
		}
	})
}

package templates

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func strp(s string) *string { return &s }

// The files under testdata/formats are written as each format's own
// documentation shows them: GitHub's "Storing prompts in GitHub
// repositories" (.prompt.yml), dotprompt's specification examples, and
// Prompty's documentation.
func TestReadFormatFiles(t *testing.T) {
	tests := []struct {
		file       string
		format     string
		title      string
		desc       string
		vars       []Variable
		msgs       []Message
		model      *Model
		tests      []Test
		evaluators []string
	}{
		{
			file: "summarize.prompt.yml", format: FormatPromptYML, title: "Text Summarizer", desc: "Summarizes input text concisely",
			vars: []Variable{{Name: "input", Type: TypeString, Required: true, Description: "The value of {{input}} in the prompt."}},
			msgs: []Message{
				{Role: RoleUser, Content: "You are a text summarizer. Your only job is to summarize text given to you."},
				{Role: RoleUser, Content: "Summarize the given text, beginning with \"Summary -\":\n<text>\n{{input}}\n</text>\n"},
			},
			model: &Model{Name: "openai/gpt-4o-mini", Parameters: map[string]any{"temperature": 0.5}},
			tests: []Test{{Name: "testData 1", Arguments: map[string]string{
				"input": "The quick brown fox jumped over the lazy dog.\nThe dog was too tired to react.\n"}}},
			evaluators: []string{"Output should start with 'Summary -'", "Similarity"},
		},
		{
			file: "greet.prompt", format: FormatDotprompt,
			vars: []Variable{
				{Name: "location", Type: TypeString, Default: strp("a restaurant")},
				{Name: "style", Type: TypeString},
				{Name: "name", Type: TypeString},
			},
			msgs: []Message{{Role: RoleUser, Content: "You are the world's most welcoming AI assistant and are currently working at {{location}}.\n\n" +
				"Greet a guest named {{name}} in the style of {{style}}."}},
			model: &Model{Name: "googleai/gemini-1.5-flash", Parameters: map[string]any{"temperature": 0.9}},
		},
		{
			file: "food_chat.prompt", format: FormatDotprompt,
			vars: []Variable{{Name: "userQuestion", Type: TypeString, Required: true}},
			msgs: []Message{
				{Role: RoleUser, Content: "You are a helpful AI assistant that really loves to talk about food. Try to work\nfood items into all of your conversations."},
				{Role: RoleUser, Content: "{{userQuestion}}"},
			},
			model: &Model{Name: "vertexai/gemini-1.5-pro"},
		},
		{
			file: "typed.prompt", format: FormatDotprompt, title: "typed", desc: "Inputs of every type",
			vars: []Variable{
				{Name: "topic", Type: TypeString, Description: "what to write about", Required: true},
				{Name: "count", Type: TypeInteger, Required: true},
				{Name: "ratio", Type: TypeNumber, Default: strp("0.5")},
				{Name: "formal", Type: TypeBoolean, Default: strp("false")},
				{Name: "tone", Type: TypeString, Description: "the voice", Enum: []string{"warm", "dry"}},
			},
			msgs: []Message{
				{Role: RoleUser, Content: "Be {{tone}}."},
				{Role: RoleUser, Content: "Write {{count}} lines on {{topic}} ({{ratio}}, {{formal}})."},
				{Role: RoleAssistant, Content: "Here they are:"},
			},
		},
		{
			file: "chat.prompty", format: FormatPrompty, title: "ExamplePrompt", desc: "A prompt that uses context to ground an incoming question",
			vars: []Variable{
				{Name: "firstName", Type: TypeString, Required: true, Examples: []string{"Seth"}},
				{Name: "context", Type: TypeString, Required: true, Examples: []string{promptyContext}},
				{Name: "question", Type: TypeString, Required: true, Examples: []string{"What can you tell me about your tents?"}},
			},
			msgs: []Message{
				{Role: RoleUser, Content: "You are an AI assistant who helps people find information. As the assistant, \n" +
					"you answer questions briefly, succinctly, and in a personable manner using \n" +
					"markdown and even add some personal flair with appropriate emojis.\n\n# Customer\n" +
					"You are helping {{firstName}} to find answers to their questions.\nUse their name to address them in your responses.\n\n" +
					"# Context\nUse the following context to provide a more personalized response to {{firstName}}:\n{{context}}"},
				{Role: RoleUser, Content: "{{question}}"},
			},
			model: &Model{Name: "<your-deployment>", Parameters: map[string]any{"max_tokens": uint64(3000)}},
			tests: []Test{{Name: "sample", Arguments: map[string]string{"firstName": "Seth", "context": promptyContext,
				"question": "What can you tell me about your tents?"}}},
		},
		{
			file: "support.prompty", format: FormatPrompty, title: "Support", desc: "Answers a customer",
			vars: []Variable{
				{Name: "customer", Type: TypeString, Description: "the customer's first name", Default: strp("there")},
				{Name: "question", Type: TypeString, Description: "what they ask", Required: true},
			},
			msgs: []Message{
				{Role: RoleUser, Content: "You answer support questions kindly."},
				{Role: RoleUser, Content: "Hi, I am {{customer}}. {{question}}"},
				{Role: RoleAssistant, Content: "Let me look into that."},
			},
			model: &Model{Name: "gpt-4o", Parameters: map[string]any{"temperature": 0.2}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "formats", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			tpl, warnings, err := Parse(data, ParseOptions{FileName: "library/" + tt.file})
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if len(warnings) > 0 {
				t.Errorf("warnings: %v", warnings)
			}
			_, name := FormatOf(tt.file)
			if tpl.Format != tt.format || tpl.Metadata.Name != name || tpl.Metadata.Title != tt.title || tpl.Metadata.Description != tt.desc {
				t.Errorf("format %q name %q title %q description %q", tpl.Format, tpl.Metadata.Name, tpl.Metadata.Title, tpl.Metadata.Description)
			}
			if diff := cmp.Diff(described(tt.vars), tpl.Variables, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("variables (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.msgs, tpl.Messages); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.model, tpl.Model); diff != "" {
				t.Errorf("model (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.tests, tpl.Tests, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("tests (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.evaluators, tpl.Evaluators, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("evaluators (-want +got):\n%s", diff)
			}
			if len(tpl.Turns()) != len(tpl.Messages) || len(tpl.Results) != 0 {
				t.Errorf("%d turns for %d messages, %d results", len(tpl.Turns()), len(tpl.Messages), len(tpl.Results))
			}
		})
	}
}

// described is vars with the description a variable the file does not
// describe is given.
func described(vars []Variable) []Variable {
	out := slices.Clone(vars)
	for i := range out {
		if out[i].Description == "" {
			out[i].Description = "The value of {{" + out[i].Name + "}} in the prompt."
		}
	}
	return out
}

const promptyContext = "The Alpine Explorer Tent boasts a detachable divider for privacy,  numerous mesh windows and adjustable vents for ventilation, and  " +
	"a waterproof design. It even has a built-in gear loft for storing  your outdoor essentials. In short, it's a blend of privacy, comfort,  " +
	"and convenience, making it your second home in the heart of nature!\n"

// A list input (Picoschema's array, Prompty's array type) is an array
// variable; its default, a YAML list, travels as a JSON array text.
func TestReadListInputs(t *testing.T) {
	for file, data := range map[string]string{
		"a.prompt":  "---\ninput:\n  schema:\n    tags?(array, labels to use): string\n  default:\n    tags: [a, b]\n---\n{{tags}}",
		"a.prompty": "---\ninputs:\n  tags:\n    type: array\n    description: labels to use\n    default: [a, b]\n---\nuser:\n{{tags}}",
	} {
		tpl, _, err := Parse([]byte(data), ParseOptions{FileName: file})
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		want := []Variable{{Name: "tags", Type: TypeArray, Description: "labels to use", Default: strp(`["a","b"]`)}}
		if diff := cmp.Diff(want, tpl.Variables); diff != "" { // described in the file
			t.Errorf("%s: variables (-want +got):\n%s", file, diff)
		}
	}
}

// A .prompt.yml file declares no inputs: its variables come from its
// placeholders, and one an {{#each}} loops over is a list; the engine's
// own words ({{this}}, {{else}}) are no variables.
func TestReadUndeclaredLogic(t *testing.T) {
	data := "name: Plan\nmessages:\n  - role: user\n    content: \"{{#if goal}}Goal: {{goal}}{{else}}No goal{{/if}}\\n{{#each files}}- {{this}}\\n{{/each}}{{note}}\"\n"
	tpl, warnings, err := Parse([]byte(data), ParseOptions{FileName: "plan.prompt.yml"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range tpl.Variables {
		got = append(got, v.Name+":"+v.Type)
	}
	if diff := cmp.Diff([]string{"goal:string", "files:array", "note:string"}, got); diff != "" {
		t.Errorf("variables (-want +got):\n%s", diff)
	}
	if len(warnings) > 0 {
		t.Errorf("warnings: %v", warnings)
	}
}

func TestFormatOf(t *testing.T) {
	tests := []struct{ path, format, name string }{
		{"a/summarize.prompt.yml", FormatPromptYML, "summarize"},
		{"summarize.prompt.yaml", FormatPromptYML, "summarize"},
		{"greet.prompt", FormatDotprompt, "greet"},
		{"_style.prompt", FormatDotprompt, "_style"},
		{"chat.prompty", FormatPrompty, "chat"},
		{"Code_Review.json", FormatJSON, "Code_Review"},
		{"notes.yml", "", ""},
		{"README.md", "", ""},
		{"x.prompt.txt", "", ""},
	}
	for _, tt := range tests {
		if f, n := FormatOf(tt.path); f != tt.format || n != tt.name {
			t.Errorf("FormatOf(%q) = %q, %q; want %q, %q", tt.path, f, n, tt.format, tt.name)
		}
	}
}

func TestIsLibraryFile(t *testing.T) {
	for p, want := range map[string]bool{
		"a.json": true, "t/a.prompt.yml": true, "a.prompt.yaml": true, "a.prompt": true, "a.prompty": true,
		"_partial.prompt": true, // loaded, for the templates that include it; not a template itself
		".a.prompt.yml":   false, "a.yml": false, "a.yaml": false, "a.md": false, "a.txt": false,
	} {
		if got := IsLibraryFile(p); got != want {
			t.Errorf("IsLibraryFile(%q) = %v, want %v", p, got, want)
		}
	}
}

// Every format's problems are reported as our JSON's are: INVALID_TEMPLATE
// with each problem's JSON pointer, and its line in the message.
func TestReadFormatErrors(t *testing.T) {
	tests := []struct {
		name, file, data string
		pointer, message string
	}{
		{"yml: bad YAML", "a.prompt.yml", "name: x\nmessages: [\n", "", "malformed YAML at line"},
		{"yml: not a mapping", "a.prompt.yml", "- a\n- b\n", "", "line 1: the YAML must be a mapping"},
		{"yml: no messages", "a.prompt.yml", "name: x\n", "/messages", `required field "messages" is missing`},
		{"yml: messages not a list", "a.prompt.yml", "messages: hello\n", "/messages", "line 1: messages must be a list"},
		{"yml: role missing", "a.prompt.yml", "messages:\n  - content: hi\n", "/messages/0/role", "needs a role"},
		{"yml: content not text", "a.prompt.yml", "messages:\n  - role: user\n    content: [a]\n", "/messages/0/content", "line 3: the message needs its content as text"},
		{"yml: empty content", "a.prompt.yml", "messages:\n  - role: user\n    content: \"  \"\n", "/messages/0", "line 3: the user message is empty"},
		{"yml: unknown role", "a.prompt.yml", "messages:\n  - role: tool\n    content: x\n", "/messages/0", `role "tool" is not one a prompt can carry`},
		{"yml: name not a string", "a.prompt.yml", "name: [a]\nmessages:\n  - role: user\n    content: x\n", "/name", "line 1: name must be a string"},
		{"yml: bad testData", "a.prompt.yml", "messages:\n  - role: user\n    content: x\ntestData: 3\n", "/testData", "line 4: testData must be a list"},
		{"yml: testData row", "a.prompt.yml", "messages:\n  - role: user\n    content: x\ntestData:\n  - 3\n", "/testData/0", "line 5: a testData row"},
		{"yml: evaluator without name", "a.prompt.yml", "messages:\n  - role: user\n    content: x\nevaluators:\n  - uses: github/similarity\n", "/evaluators/0", "needs a name"},
		{"yml: modelParameters", "a.prompt.yml", "modelParameters: 3\nmessages:\n  - role: user\n    content: x\n", "/modelParameters", "must be a mapping"},
		{"yml: alias", "a.prompt.yml", "x: &a hi\nmessages:\n  - role: user\n    content: *a\n", "", "anchors and aliases"},
		{"yml: deep brackets", "a.prompt.yml", "x: " + strings.Repeat("[", 65) + "\n", "", "line 1: the YAML opens more than 64 brackets"},
		{"yml: deep block nesting", "a.prompt.yml", "messages:\n" + strings.Repeat("- ", 129) + "x\n", "", "line 2: the line starts with more than 256 spaces"},
		{"dotprompt: deep front matter", "a.prompt", "---\nx: " + strings.Repeat("{a: ", 65) + "\n---\nhi", "", "line 2: the YAML opens more than 64 brackets"},
		{"yml: second document", "a.prompt.yml", "messages:\n  - role: user\n    content: x\n---\nb: 1\n", "", "a second YAML document"},
		{"file name not a template name", "my prompt.prompt.yml", "messages:\n  - role: user\n    content: x\n", "", `template name "my prompt"`},
		{"dotprompt: no body", "a.prompt", "---\nmodel: x\n---\n", "", "the file has no message"},
		{"dotprompt: unclosed front matter", "a.prompt", "---\nmodel: x\nHello\n", "", "line 1: the front matter that starts with --- has no closing"},
		{"dotprompt: bad front matter", "a.prompt", "---\nmodel: [x\n---\nHi\n", "", "malformed YAML at line"},
		{"dotprompt: unknown role", "a.prompt", "---\nmodel: x\n---\nHi\n{{role \"tool\"}}\nresult\n", "", `line 5: role "tool" is not one a prompt can carry: use system, user or assistant (or model)`},
		{"dotprompt: bad picoschema", "a.prompt", "---\ninput:\n  schema:\n    x(foo): string\n---\n{{x}}\n", "/input/schema", "line 4: input.schema is not valid Picoschema"},
		{"dotprompt: enum not a list", "a.prompt", "---\ninput:\n  schema:\n    x(enum): a\n---\n{{x}}\n", "/input/schema", "not valid Picoschema"},
		{"dotprompt: named schema", "a.prompt", "---\ninput:\n  schema: Person\n---\n{{x}}\n", "/input/schema", "a schema named elsewhere is not supported"},
		{"dotprompt: bad variable name", "a.prompt", "---\ninput:\n  schema:\n    first-name: string\n---\n{{x}}\n", "/input/schema/first-name", `"first-name" is not a valid variable name`},
		{"dotprompt: wildcard", "a.prompt", "---\ninput:\n  schema:\n    (*): string\n---\n{{x}}\n", "/input/schema/(*)", "wildcard inputs"},
		{"dotprompt: default not a value", "a.prompt", "---\ninput:\n  schema:\n    x?: string\n  default:\n    x: {a: 1}\n---\n{{x}}\n", "/input/default/x", "the default of \"x\" must be a value"},
		{"dotprompt: input not a mapping", "a.prompt", "---\ninput: 3\n---\n{{x}}\n", "/input", "line 2: input must be a mapping"},
		{"prompty: no front matter", "a.prompty", "system:\nHi\n", "", "line 1: a Prompty file starts with front matter"},
		{"prompty: tool role", "a.prompty", "---\nname: x\n---\nuser:\nHi\ntool:\nresult\n", "", `line 6: role "tool" is not one a prompt can carry`},
		{"prompty: bad input type", "a.prompty", "---\ninputs:\n  x:\n    type: date\n---\nuser:\n{{x}}\n", "/inputs/x/type", `line 4: type "date" of input "x"`},
		{"prompty: required not a boolean", "a.prompty", "---\ninputs:\n  x:\n    required: yes please\n---\nuser:\n{{x}}\n", "/inputs/x/required", "required must be true or false"},
		{"prompty: inputs not a mapping", "a.prompty", "---\ninputs: [x]\n---\nuser:\n{{x}}\n", "/inputs", "inputs must map"},
		{"prompty: model not a mapping", "a.prompty", "---\nmodel: [x]\n---\nuser:\nhi\n", "/model", "model must be a mapping"},
		{"prompty: only roles", "a.prompty", "---\nname: x\n---\nuser:\nassistant:\n\n", "", "the file has no message"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tpl, _, err := Parse([]byte(tt.data), ParseOptions{FileName: tt.file})
			if err == nil {
				t.Fatalf("accepted: %+v", tpl)
			}
			if tpl != nil || fault.CodeOf(err) != fault.InvalidTemplate {
				t.Fatalf("got %v, %v", tpl, err)
			}
			for _, p := range Problems(err) {
				if p.Pointer == tt.pointer && strings.Contains(p.Message, tt.message) {
					return
				}
			}
			t.Errorf("no problem at %q containing %q in %v", tt.pointer, tt.message, Problems(err))
		})
	}
}

func TestReadFormatEdges(t *testing.T) {
	tests := []struct {
		name, file, data string
		msgs             []Message
		vars             []string
		warnings         []string // kinds
	}{
		{"yml: system moves first", "a.prompt.yml",
			"messages:\n  - role: user\n    content: Q {{q}}\n  - role: assistant\n    content: A\n  - role: system\n    content: Be brief.\n",
			[]Message{{RoleUser, "Be brief."}, {RoleUser, "Q {{q}}"}, {RoleAssistant, "A"}}, []string{"q"}, nil},
		{"yml: placeholders in first-use order, once", "a.prompt.yml",
			"messages:\n  - role: user\n    content: \"{{b}} {{a}} {{b}} {{{c}}}\"\n", []Message{{RoleUser, "{{b}} {{a}} {{b}} {{{c}}}"}}, []string{"b", "a", "c"}, nil},
		{"yml: unknown key warned", "a.prompt.yml", "nmae: x\nmessages:\n  - role: user\n    content: x\n",
			[]Message{{RoleUser, "x"}}, nil, []string{WarnUnknownField}},
		{"yml: .yaml too, no placeholders", "a.prompt.yaml", "messages:\n  - role: user\n    content: plain\n", []Message{{RoleUser, "plain"}}, nil, nil},
		{"dotprompt: no front matter", "a.prompt", "Hello {{who}}", []Message{{RoleUser, "Hello {{who}}"}}, []string{"who"}, nil},
		{"dotprompt: empty front matter", "a.prompt", "---\n---\nHello", []Message{{RoleUser, "Hello"}}, nil, nil},
		{"dotprompt: model role and history", "a.prompt", "---\nmodel: x\n---\n{{role 'user'}}Hi{{role \"model\"}}Hello{{history}}\n{{ role \"user\" }} more",
			[]Message{{RoleUser, "Hi"}, {RoleAssistant, "Hello"}, {RoleUser, "more"}}, nil, nil},
		{"dotprompt: undeclared placeholder and unused input", "a.prompt", "---\ninput:\n  schema:\n    a: string\n---\n{{b}}",
			[]Message{{RoleUser, "{{b}}"}}, []string{"a"}, []string{WarnUndefinedVariable, WarnUnusedVariable}},
		{"dotprompt: object input as text", "a.prompt", "---\ninput:\n  schema:\n    user(object):\n      name: string\n---\n{{user}}",
			[]Message{{RoleUser, "{{user}}"}}, []string{"user"}, []string{WarnUnknownField}},
		{"dotprompt: ext keys", "a.prompt", "---\nmyext.foo: 1\n---\nx", []Message{{RoleUser, "x"}}, nil, nil},
		{"dotprompt: JSON Schema input", "a.prompt", "---\ninput:\n  schema:\n    type: object\n    properties:\n      z:\n        type: string\n      a:\n        type: boolean\n    required: [z]\n---\n{{z}} {{a}}",
			[]Message{{RoleUser, "{{z}} {{a}}"}}, []string{"z", "a"}, nil},
		{"prompty: text before a role is the system's", "a.prompty", "---\nname: x\n---\nBe kind.\n\nuser:\nHi\n# Assistant:\nHello\n",
			[]Message{{RoleUser, "Be kind."}, {RoleUser, "Hi"}, {RoleAssistant, "Hello"}}, nil, nil},
		{"prompty: a role word inside a line is text", "a.prompty", "---\nname: x\n---\nuser:\nthe user: said hi\n",
			[]Message{{RoleUser, "the user: said hi"}}, nil, nil},
		{"prompty: an empty section is left out", "a.prompty", "---\nname: x\n---\nuser:\nHi\nassistant:\n\n", []Message{{RoleUser, "Hi"}}, nil, nil},
		{"prompty: input as a type", "a.prompty", "---\ninputs:\n  n: integer\n---\nuser:\n{{n}}", []Message{{RoleUser, "{{n}}"}}, []string{"n"}, nil},
		{"prompty: a CRLF file", "a.prompty", "---\r\nname: x\r\n---\r\nuser:\r\nHi {{n}}\r\n", []Message{{RoleUser, "Hi {{n}}"}}, []string{"n"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tpl, warnings, err := Parse([]byte(tt.data), ParseOptions{FileName: tt.file})
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.msgs, tpl.Messages); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
			var vars, kinds []string
			for _, v := range tpl.Variables {
				vars = append(vars, v.Name)
			}
			for _, w := range warnings {
				kinds = append(kinds, w.Kind)
			}
			if diff := cmp.Diff(tt.vars, vars, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("variables (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.warnings, kinds, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("warning kinds (-want +got):\n%s (%v)", diff, warnings)
			}
		})
	}
}

// The formats are served from one catalog beside our JSON: named after
// their files, dotprompt partials left out, a name given twice reported.
func TestBuildFormats(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", "formats", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	files := []File{
		{Path: "t/summarize.prompt.yml", Data: read("summarize.prompt.yml")},
		{Path: "t/greet.prompt", Data: read("greet.prompt")},
		{Path: "t/_style.prompt", Data: []byte("Write plainly.")},
		{Path: "t/chat.prompty", Data: read("chat.prompty")},
		{Path: "t/Fixture_Template.json", Data: readFixture(t)},
		{Path: "t/notes.yml", Data: []byte("not: a template")},
		{Path: "u/greet.prompt.yml", Data: read("summarize.prompt.yml")},
		{Path: "t/flows/chat.prompt", Data: []byte("Hi {{x}}")},
	}
	c := Build(files, BuildOptions{})
	var names []string
	for _, e := range c.Templates() {
		names = append(names, e.Template.Metadata.Name)
	}
	want := []string{"Fixture_Template", "chat", "greet", "summarize"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	inv := c.Invalid()
	if len(inv) != 2 || inv[0].Path != "t/flows/chat.prompt" || inv[1].Path != "u/greet.prompt.yml" {
		t.Fatalf("invalid = %v", inv)
	}
	if !strings.Contains(inv[1].Err.Error(), "duplicate name") {
		t.Errorf("duplicate reported as %v", inv[1].Err)
	}
	// A template missing because its file is invalid points at the file,
	// whatever its format.
	bad := Build([]File{{Path: "t/broken.prompt.yml", Data: []byte("name: x\n")}}, BuildOptions{})
	if f := NotFound("broken", bad); f.Details["file"] != "t/broken.prompt.yml" {
		t.Errorf("NotFound details = %v", f.Details)
	}
}

// Each reader is fuzzed on its own, from its real files and a few
// hostile seeds: whatever the bytes, it returns a template whose messages,
// roles and variables hold, or INVALID_TEMPLATE with its problems.
func FuzzReadPromptYML(f *testing.F) {
	fuzzReader(f, "f.prompt.yml", []string{"summarize.prompt.yml"}, "x: &a [*a]\n", "messages:\n  - role: system\n    content: \"{{a}}\"\n")
}

func FuzzReadDotprompt(f *testing.F) {
	fuzzReader(f, "f.prompt", []string{"greet.prompt", "food_chat.prompt", "typed.prompt"},
		"---\ninput:\n  schema:\n    x(enum): 3\n---\n{{role \"model\"}}", "---\n---\n{{history}}")
}

func FuzzReadPrompty(f *testing.F) {
	fuzzReader(f, "f.prompty", []string{"chat.prompty", "support.prompty"}, "---\n---\nuser:\n", "---\ninputs:\n  a: [b]\n---\ntool:\nx")
}

func fuzzReader(f *testing.F, name string, files []string, seeds ...string) {
	for _, file := range files {
		data, err := os.ReadFile(filepath.Join("testdata", "formats", file))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	format, _ := FormatOf(name)
	f.Fuzz(func(t *testing.T, data []byte) {
		tpl, _, err := Parse(data, ParseOptions{MaxFileSize: 4096, FileName: name})
		if err != nil {
			if tpl != nil {
				t.Fatal("template returned with an error")
			}
			code := fault.CodeOf(err)
			if code != fault.InvalidTemplate && code != fault.TemplateTooLarge {
				t.Fatalf("unexpected code %s: %v", code, err)
			}
			if code == fault.InvalidTemplate && len(Problems(err)) == 0 {
				t.Fatalf("INVALID_TEMPLATE without problems: %v", err)
			}
			return
		}
		if tpl.Metadata.Name != "f" || tpl.Format != format {
			t.Fatalf("name %q, format %q", tpl.Metadata.Name, tpl.Format)
		}
		if len(tpl.Messages) == 0 || len(tpl.Turns()) != len(tpl.Messages) {
			t.Fatalf("%d turns for %d messages", len(tpl.Turns()), len(tpl.Messages))
		}
		for _, m := range tpl.Messages {
			if m.Role != RoleUser && m.Role != RoleAssistant || strings.TrimSpace(m.Content) == "" {
				t.Fatalf("message %+v", m)
			}
		}
		for _, v := range tpl.Variables {
			if !variableName.MatchString(v.Name) || v.Description == "" {
				t.Fatalf("variable %+v", v)
			}
		}
	})
}

// BenchmarkRead: reading each format's real file, against our JSON
// fixture, per file (ns and allocations).
func BenchmarkRead(b *testing.B) {
	for _, file := range []string{"../Fixture_Template.json", "summarize.prompt.yml", "typed.prompt", "chat.prompty"} {
		data, err := os.ReadFile(filepath.Join("testdata", "formats", file))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(filepath.Base(file), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := Parse(data, ParseOptions{FileName: filepath.Base(file)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package templates

// Template is one prompt template file, as authors write it. A parsed
// Template is shared by every reader of a catalog: treat it as read-only.
type Template struct {
	Metadata  Metadata   `json:"metadata"`
	Variables []Variable `json:"variables"`
	Results   []Result   `json:"results"`
	// Messages make the template a conversation: user and assistant turns,
	// in file order, after the results' text when there are results too.
	Messages []Message `json:"messages,omitempty"`
	// Resources lists context attached to the rendered prompt as embedded
	// resources: "template://NAME" or a path in the same source.
	Resources []string `json:"resources,omitempty"`
	// Tests are renderings the template must keep producing: `flowyprompt
	// test` and `flowyprompt validate` run them. A .prompt.yml file's
	// testData rows become tests with no expectation.
	Tests []Test `json:"tests,omitempty"`
	// Model is the model and settings the template was written for, from
	// the file formats that carry them (a .prompt.yml's model and
	// modelParameters, a dotprompt's model and config, a Prompty's model).
	// It is shown to clients, never acted on.
	Model *Model `json:"model,omitempty"`

	// Format is the file format the template was read from: FormatJSON
	// (ours) or one of the formats teams already keep.
	Format string `json:"-"`
	// Evaluators names a .prompt.yml file's evaluators: they judge a
	// model's output, which flowyprompt never produces, so tests report
	// them as not run.
	Evaluators []string `json:"-"`

	// sections is Results sorted by order and compiled into literal and
	// placeholder parts once, at parse time, so rendering never re-scans.
	sections []Section
	// turns is Messages compiled the same way, in file order.
	turns []Section
}

// Metadata describes a template.
type Metadata struct {
	Name string `json:"name"`
	// Title is the name a file of another format gives itself (a
	// .prompt.yml's name): clients show it; Name, from the file's name,
	// is the one they ask for.
	Title       string   `json:"title,omitempty"`
	Description string   `json:"description"`
	Version     string   `json:"version"`
	Author      string   `json:"author,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	Category    string   `json:"category,omitempty"`
	LastUpdated string   `json:"lastUpdated,omitempty"`
}

// Template file formats.
const (
	FormatJSON      = "json"       // flowyprompt's own NAME.json
	FormatPromptYML = "prompt-yml" // GitHub Models' NAME.prompt.yml / .prompt.yaml
	FormatDotprompt = "dotprompt"  // Google's NAME.prompt
	FormatPrompty   = "prompty"    // Microsoft's NAME.prompty
)

// Model is a template's model settings, as its file gives them.
type Model struct {
	// Name is the model's identifier ("openai/gpt-4o-mini").
	Name string `json:"name,omitempty"`
	// Parameters are the settings (temperature, max tokens…), as written.
	Parameters map[string]any `json:"parameters,omitempty"`
}

// Test is one rendering of a template and what it must hold.
type Test struct {
	Name string `json:"name"`
	// Arguments are the values, in the same string form as prompts/get's
	// arguments (a list as a JSON array, a boolean as "true"/"false").
	Arguments map[string]string `json:"arguments,omitempty"`
	Expect    Expectation       `json:"expect"`
}

// Expectation is what a test's rendered text must hold; an empty one only
// checks that the template renders.
type Expectation struct {
	Contains    []string `json:"contains,omitempty"`
	NotContains []string `json:"notContains,omitempty"`
	Equals      *string  `json:"equals,omitempty"`
}

// Variable types. TypeString is the default, and the only type of the
// seed's files; values of every type travel as strings (prompts/get's
// arguments are strings) and are parsed by type when rendered.
const (
	TypeString  = "string"
	TypeBoolean = "boolean"
	TypeNumber  = "number"
	TypeInteger = "integer"
	TypeArray   = "array" // a list of strings
)

// Variable is one input of a template.
type Variable struct {
	Name        string  `json:"name"`
	Type        string  `json:"type"`
	Description string  `json:"description"`
	Required    bool    `json:"required,omitempty"`
	Default     *string `json:"default,omitempty"`
	// Enum and Examples feed argument completion and the tool schemas.
	Enum     []string `json:"enum,omitempty"`
	Examples []string `json:"examples,omitempty"`
}

// Result is one section of the rendered prompt.
type Result struct {
	Name    string `json:"name"`
	Content string `json:"content"`
	Format  string `json:"format,omitempty"`
	Order   *int   `json:"order,omitempty"`
}

// Message roles: the two the MCP prompts specification allows.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message is one turn of a conversation template.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

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

	// sections is Results sorted by order and compiled into literal and
	// placeholder parts once, at parse time, so rendering never re-scans.
	sections []Section
	// turns is Messages compiled the same way, in file order.
	turns []Section
}

// Metadata describes a template.
type Metadata struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Version     string   `json:"version"`
	Author      string   `json:"author,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	Category    string   `json:"category,omitempty"`
	LastUpdated string   `json:"lastUpdated,omitempty"`
}

// Variable is one string input of a template.
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

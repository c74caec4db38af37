package mcp

import (
	"encoding/json"
	"time"
)

// Protocol revisions we speak. Claude Desktop disconnects when the version
// we answer differs from the one it asked for, so every supported revision
// is echoed exactly.
const (
	Version20241105 = "2024-11-05"
	Version20250326 = "2025-03-26"
	Version20250618 = "2025-06-18"
	Version20251125 = "2025-11-25"
	LatestVersion   = Version20251125
)

// SupportedVersions lists the revisions echoed back at initialize.
var SupportedVersions = []string{Version20241105, Version20250326, Version20250618, Version20251125}

// IsSupportedVersion reports whether v is one of SupportedVersions.
func IsSupportedVersion(v string) bool {
	for _, s := range SupportedVersions {
		if s == v {
			return true
		}
	}
	return false
}

// NegotiateVersion answers a client's requested revision.
func NegotiateVersion(requested string) string {
	if IsSupportedVersion(requested) {
		return requested
	}
	return LatestVersion
}

// RequestMeta is the `_meta` object of request params.
type RequestMeta struct {
	ProgressToken json.RawMessage `json:"progressToken,omitempty"`
}

// ParamsMeta is embedded in every params struct so the engine can find the
// progress token without decoding the params twice.
type ParamsMeta struct {
	Meta *RequestMeta `json:"_meta,omitempty"`
}

func (p *ParamsMeta) requestMeta() *RequestMeta { return p.Meta }

// Implementation names a client or server.
type Implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

// InitializeParams is the client's initialize request.
type InitializeParams struct {
	ParamsMeta
	ProtocolVersion string          `json:"protocolVersion"`
	Capabilities    json.RawMessage `json:"capabilities"`
	ClientInfo      Implementation  `json:"clientInfo"`
}

// ClientCapabilities is the part of the client's capabilities we act on.
type ClientCapabilities struct {
	Sampling    json.RawMessage `json:"sampling,omitempty"`
	Elicitation json.RawMessage `json:"elicitation,omitempty"`
	Roots       json.RawMessage `json:"roots,omitempty"`
}

// Has reports whether the client declared capability name ("sampling",
// "elicitation" or "roots").
func (c ClientCapabilities) Has(name string) bool {
	var raw json.RawMessage
	switch name {
	case "sampling":
		raw = c.Sampling
	case "elicitation":
		raw = c.Elicitation
	case "roots":
		raw = c.Roots
	}
	return len(raw) > 0 && string(raw) != "null"
}

// InitializeResult is our answer to initialize.
type InitializeResult struct {
	ProtocolVersion string             `json:"protocolVersion"`
	Capabilities    ServerCapabilities `json:"capabilities"`
	ServerInfo      Implementation     `json:"serverInfo"`
	Instructions    string             `json:"instructions,omitempty"`
}

// ServerCapabilities advertises what the server supports.
type ServerCapabilities struct {
	Prompts     *ListChangedCapability `json:"prompts,omitempty"`
	Tools       *ListChangedCapability `json:"tools,omitempty"`
	Resources   *ResourcesCapability   `json:"resources,omitempty"`
	Completions *struct{}              `json:"completions,omitempty"`
	Logging     *struct{}              `json:"logging,omitempty"`
}

// ListChangedCapability is the prompts and tools capability.
type ListChangedCapability struct {
	ListChanged bool `json:"listChanged"`
}

// ResourcesCapability is the resources capability.
type ResourcesCapability struct {
	Subscribe   bool `json:"subscribe"`
	ListChanged bool `json:"listChanged"`
}

// PaginatedParams carries the opaque cursor of list requests.
type PaginatedParams struct {
	ParamsMeta
	Cursor string `json:"cursor,omitempty"`
}

// Prompt is one entry of prompts/list.
type Prompt struct {
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments"`
	// Meta is the prompt's _meta: what the server adds under its own
	// keys (a template's model settings).
	Meta map[string]any `json:"_meta,omitempty"`
}

// PromptArgument is one argument of a prompt.
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required"`
}

// ListPromptsResult answers prompts/list.
type ListPromptsResult struct {
	Prompts    []Prompt `json:"prompts"`
	NextCursor string   `json:"nextCursor,omitempty"`
	// Meta is the result's _meta (Server.ListMeta).
	Meta map[string]any `json:"_meta,omitempty"`
}

// GetPromptParams is a prompts/get request.
type GetPromptParams struct {
	ParamsMeta
	Name      string            `json:"name"`
	Arguments map[string]string `json:"arguments,omitempty"`
	Retry
}

// GetPromptResult answers prompts/get.
type GetPromptResult struct {
	Description string          `json:"description,omitempty"`
	Messages    []PromptMessage `json:"messages"`
	// Meta is the result's _meta, as Prompt's.
	Meta map[string]any `json:"_meta,omitempty"`
}

// PromptMessage is one message of a prompt.
type PromptMessage struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
}

// Content is a text, image, audio, resource or resource_link content block.
type Content struct {
	Type     string            `json:"type"`
	Text     string            `json:"text,omitempty"`
	Data     string            `json:"data,omitempty"`
	MimeType string            `json:"mimeType,omitempty"`
	Resource *ResourceContents `json:"resource,omitempty"`
	// URI and Name are set on resource_link blocks.
	URI         string          `json:"uri,omitempty"`
	Name        string          `json:"name,omitempty"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
}

// TextContent returns a text content block.
func TextContent(text string) Content { return Content{Type: "text", Text: text} }

// ResourceContents is the body of a resource.
type ResourceContents struct {
	URI      string `json:"uri"`
	MimeType string `json:"mimeType,omitempty"`
	Text     string `json:"text,omitempty"`
	Blob     string `json:"blob,omitempty"` // base64
}

// MarshalJSON writes text even when it is empty: contents are text or a
// blob, and an empty file is empty text, not neither.
func (c ResourceContents) MarshalJSON() ([]byte, error) {
	type plain ResourceContents
	if c.Blob != "" {
		return json.Marshal(plain(c))
	}
	return json.Marshal(struct {
		plain
		Text string `json:"text"`
	}{plain(c), c.Text})
}

// Tool is one entry of tools/list.
type Tool struct {
	Name         string           `json:"name"`
	Title        string           `json:"title,omitempty"`
	Description  string           `json:"description"`
	InputSchema  json.RawMessage  `json:"inputSchema"`
	OutputSchema json.RawMessage  `json:"outputSchema,omitempty"`
	Annotations  *ToolAnnotations `json:"annotations,omitempty"`
}

// ToolAnnotations are hints about a tool's behaviour.
type ToolAnnotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// ListToolsResult answers tools/list.
type ListToolsResult struct {
	Tools      []Tool `json:"tools"`
	NextCursor string `json:"nextCursor,omitempty"`
	// Meta is the result's _meta (Server.ListMeta).
	Meta map[string]any `json:"_meta,omitempty"`
}

// CallToolParams is a tools/call request.
type CallToolParams struct {
	ParamsMeta
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Retry
}

// CallToolResult answers tools/call.
type CallToolResult struct {
	Content []Content `json:"content"`
	// StructuredContent is encoded as encoding/json encodes it; a
	// json.RawMessage, which must hold one valid JSON value, is written
	// as it is.
	StructuredContent any  `json:"structuredContent,omitempty"`
	IsError           bool `json:"isError,omitempty"`
	// Meta is the result's _meta: what the server adds under its own
	// keys (which label served it).
	Meta map[string]any `json:"_meta,omitempty"`
}

// Resource is one entry of resources/list.
type Resource struct {
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MimeType    string `json:"mimeType,omitempty"`
	Size        int64  `json:"size,omitempty"`
}

// ResourceTemplate is one entry of resources/templates/list.
type ResourceTemplate struct {
	URITemplate string `json:"uriTemplate"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MimeType    string `json:"mimeType,omitempty"`
}

// ListResourcesResult answers resources/list.
type ListResourcesResult struct {
	Resources  []Resource `json:"resources"`
	NextCursor string     `json:"nextCursor,omitempty"`
	// Meta is the result's _meta (Server.ListMeta).
	Meta map[string]any `json:"_meta,omitempty"`
}

// ListResourceTemplatesResult answers resources/templates/list.
type ListResourceTemplatesResult struct {
	ResourceTemplates []ResourceTemplate `json:"resourceTemplates"`
	NextCursor        string             `json:"nextCursor,omitempty"`
	// Meta is the result's _meta (Server.ListMeta).
	Meta map[string]any `json:"_meta,omitempty"`
}

// ReadResourceParams is resources/read (and subscribe / unsubscribe).
type ReadResourceParams struct {
	ParamsMeta
	URI string `json:"uri"`
	Retry
}

// ReadResourceResult answers resources/read.
type ReadResourceResult struct {
	Contents []ResourceContents `json:"contents"`
}

// CompleteParams is completion/complete.
type CompleteParams struct {
	ParamsMeta
	Ref struct {
		Type string `json:"type"`
		Name string `json:"name,omitempty"`
		URI  string `json:"uri,omitempty"`
	} `json:"ref"`
	Argument struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"argument"`
	Context *struct {
		Arguments map[string]string `json:"arguments,omitempty"`
	} `json:"context,omitempty"`
}

// CompleteResult answers completion/complete.
type CompleteResult struct {
	Completion Completion `json:"completion"`
}

// Completion is the list of suggested values.
type Completion struct {
	Values  []string `json:"values"`
	Total   int      `json:"total,omitempty"`
	HasMore bool     `json:"hasMore"`
}

// SetLevelParams is logging/setLevel.
type SetLevelParams struct {
	ParamsMeta
	Level string `json:"level"`
}

// CancelledParams is notifications/cancelled.
type CancelledParams struct {
	RequestID json.RawMessage `json:"requestId"`
	Reason    string          `json:"reason,omitempty"`
}

// ProgressParams is notifications/progress.
type ProgressParams struct {
	ProgressToken json.RawMessage `json:"progressToken"`
	Progress      float64         `json:"progress"`
	Total         float64         `json:"total,omitempty"`
	Message       string          `json:"message,omitempty"`
}

// LoggingMessageParams is notifications/message.
type LoggingMessageParams struct {
	Level  string `json:"level"`
	Logger string `json:"logger,omitempty"`
	Data   any    `json:"data"`
}

// Method and notification names.
const (
	MethodInitialize            = "initialize"
	MethodPing                  = "ping"
	MethodPromptsList           = "prompts/list"
	MethodPromptsGet            = "prompts/get"
	MethodToolsList             = "tools/list"
	MethodToolsCall             = "tools/call"
	MethodResourcesList         = "resources/list"
	MethodResourcesRead         = "resources/read"
	MethodResourceTemplatesList = "resources/templates/list"
	MethodResourcesSubscribe    = "resources/subscribe"
	MethodResourcesUnsubscribe  = "resources/unsubscribe"
	MethodCompletionComplete    = "completion/complete"
	MethodLoggingSetLevel       = "logging/setLevel"

	NotificationInitialized        = "notifications/initialized"
	NotificationCancelled          = "notifications/cancelled"
	NotificationProgress           = "notifications/progress"
	NotificationMessage            = "notifications/message"
	NotificationPromptsListChanged = "notifications/prompts/list_changed"
	NotificationToolsListChanged   = "notifications/tools/list_changed"
	NotificationResourcesChanged   = "notifications/resources/list_changed"
	NotificationResourceUpdated    = "notifications/resources/updated"
	MethodSamplingCreateMessage    = "sampling/createMessage"
	MethodElicitationCreate        = "elicitation/create"
)

// DiscoverResult answers server/discover.
type DiscoverResult struct {
	SupportedVersions []string           `json:"supportedVersions"`
	Capabilities      ServerCapabilities `json:"capabilities"`
	Instructions      string             `json:"instructions,omitempty"`
}

// InputRequiredResult is a modern request's interim answer: the request
// cannot be completed without what the client is asked for, and the client
// retries it with its answers in inputResponses and requestState echoed.
// Only prompts/get, tools/call and resources/read may return it, and only
// to a modern request; it must hold InputRequests, RequestState or both.
type InputRequiredResult struct {
	InputRequests map[string]InputRequest `json:"inputRequests,omitempty"`
	RequestState  string                  `json:"requestState,omitempty"`
}

// InputRequest is one question of an InputRequiredResult: an
// elicitation/create, sampling/createMessage or roots/list request.
type InputRequest struct {
	Method string `json:"method"`
	Params any    `json:"params,omitempty"`
}

// Retry is what a modern client sends back when it retries a request that
// returned an InputRequiredResult: its answers, keyed as the questions
// were, and the state echoed.
type Retry struct {
	InputResponses map[string]json.RawMessage `json:"inputResponses,omitempty"`
	RequestState   string                     `json:"requestState,omitempty"`
}

// SubscriptionsListenParams is a subscriptions/listen request.
type SubscriptionsListenParams struct {
	ParamsMeta
	Notifications SubscriptionFilter `json:"notifications"`
}

// SubscriptionFilter names the change notifications a subscription wants
// (in a request) or gets (in the acknowledgement).
type SubscriptionFilter struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
}

// CacheScope says who may keep a cacheable result.
type CacheScope string

// The cache scopes of the modern era.
const (
	// CachePublic: the result is the same for every caller; shared caches
	// may keep it.
	CachePublic CacheScope = "public"
	// CachePrivate: the result is only for callers allowed to see it;
	// only the caller's own cache may keep it.
	CachePrivate CacheScope = "private"
)

// CacheHint is how long a client may consider a result fresh, and who may
// keep it.
type CacheHint struct {
	TTL   time.Duration
	Scope CacheScope // "" means CachePublic
}

// InputRequired is what a provider whose result type is fixed (a
// PromptProvider, a ToolProvider, a ResourceProvider) returns, as its
// error, to answer a modern request with an InputRequiredResult: the engine
// sends Result in place of an error. A legacy request cannot be answered
// so (it has Request.Call instead) and gets an internal error.
type InputRequired struct {
	Result InputRequiredResult
}

func (e *InputRequired) Error() string {
	return "the request needs input from the client (an input-required result)"
}

// mayNeedInput are the methods whose modern requests may be answered with
// an InputRequiredResult.
var mayNeedInput = map[string]bool{MethodPromptsGet: true, MethodToolsCall: true, MethodResourcesRead: true}

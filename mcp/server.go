package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/flowyprompt/flowyprompt/internal/cursor"
	"github.com/flowyprompt/flowyprompt/internal/fault"
)

// PromptProvider serves prompts/list and prompts/get.
//
// Its methods, like those of ResourceProvider and CompletionProvider and
// ToolProvider.ListTools, may run on a transport's own goroutine before
// the transport writes anything (see transport.go), so they must not
// wait on the client: no Request.Call. To ask a modern client for input,
// return *InputRequired; a handler that must ask a legacy client goes in
// Server.Methods instead. Only ToolProvider.CallTool may Call.
type PromptProvider interface {
	ListPrompts(ctx context.Context, r *Request) ([]Prompt, error)
	GetPrompt(ctx context.Context, r *Request, p *GetPromptParams) (*GetPromptResult, error)
}

// ToolProvider serves tools/list and tools/call. ListTools may also be
// called with a nil Request, by the engine itself: to read which
// arguments a tool's input schema mirrors in HTTP headers (x-mcp-header).
type ToolProvider interface {
	ListTools(ctx context.Context, r *Request) ([]Tool, error)
	CallTool(ctx context.Context, r *Request, p *CallToolParams) (*CallToolResult, error)
}

// ResourceProvider serves resources/list, read and templates/list.
// Subscriptions are kept by the session (resources/subscribe) or the
// subscriptions/listen stream; providers only announce updates through
// Engine.ResourceUpdated.
//
// CheckResource reports whether ReadResource would find uri, without
// reading it: nil when it would, else the error ReadResource would give
// (a fault.ResourceNotFound for a uri it does not serve). The engine asks
// it before it keeps a subscription, so that a client can make the server
// hold only URIs of resources it serves. It is called once per URI
// subscribed to, up to EngineOptions.MaxSubscriptions times for one
// request, so it must be cheap: a lookup in what the provider holds, at
// most a file's metadata, never its content.
type ResourceProvider interface {
	ListResources(ctx context.Context, r *Request) ([]Resource, error)
	ListResourceTemplates(ctx context.Context, r *Request) ([]ResourceTemplate, error)
	ReadResource(ctx context.Context, r *Request, uri string) (*ReadResourceResult, error)
	CheckResource(ctx context.Context, r *Request, uri string) error
}

// CompletionProvider serves completion/complete.
type CompletionProvider interface {
	Complete(ctx context.Context, r *Request, p *CompleteParams) (*CompleteResult, error)
}

// Server describes what the engine serves: identity, providers and
// options. Build it, then hand it to NewEngine; do not change it after.
type Server struct {
	Info         Implementation
	Instructions string
	Prompts      PromptProvider
	Tools        ToolProvider
	Resources    ResourceProvider
	Completion   CompletionProvider
	// PageSize is the number of items per list page (default 100).
	PageSize int
	// Methods adds or overrides methods (tests and fixtures use it).
	Methods map[string]Handler
	// Greeting, when set, returns log messages every client is sent once,
	// as soon as it may be sent notifications (after
	// notifications/initialized): warnings that predate it, which the
	// broadcasts made before it connected could not reach. ctx carries
	// the values of the context the session was opened with (who opened
	// it: see Engine.NewSession), so each may be told what is theirs.
	Greeting func(ctx context.Context) []LogMessage
	// OnSessionClosed, when set, is called once with the id of each
	// session that ends, so that what an application keeps per session
	// (see Request.SessionID) can go.
	OnSessionClosed func(id string)
	// Cache, when set, says how long a modern client may keep the result
	// of method (server/discover, a list, resources/read) and who may
	// keep it. It is called for every such result, so a hint can count
	// down (to a source's next revalidation, say); without it results say
	// ttlMs 0, public.
	Cache func(method string) CacheHint
	// ListMeta, when set, returns the _meta of a list result (prompts,
	// tools, resources, resource templates) of the request r, which ctx
	// runs: what the application says of what served it (nil: none).
	ListMeta func(ctx context.Context, r *Request) map[string]any
}

// listMeta is s.ListMeta's answer for r, nil without it.
func (s *Server) listMeta(ctx context.Context, r *Request) map[string]any {
	if s.ListMeta == nil {
		return nil
	}
	return s.ListMeta(ctx, r)
}

// Handler runs one request. The result is encoded as the response's
// "result"; an error is mapped by ErrorObject.
type Handler func(ctx context.Context, r *Request) (any, error)

type method struct {
	handle     Handler
	beforeInit bool // allowed before initialize (only ping)
	era        era
	// long: the request answers with a stream that lasts until the client
	// or the server ends it (subscriptions/listen), so it has no deadline.
	long bool
	// quick: the handler never waits on the client (no sampling or
	// elicitation), so a request of it that has a Route runs on the
	// transport's goroutine, which waits for the answer anyway (see
	// dispatch.go).
	quick bool
}

// typed adapts a handler of decoded params.
func typed[P any](fn func(context.Context, *Request, *P) (any, error)) Handler {
	return func(ctx context.Context, r *Request) (any, error) {
		p := new(P)
		if err := r.Decode(p); err != nil {
			return nil, err
		}
		return fn(ctx, r, p)
	}
}

func describeJSONError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "params"
		}
		return fmt.Sprintf("%s must be %s, not %s", field, jsonTypeName(te.Type.Kind().String()), te.Value)
	}
	return err.Error()
}

func jsonTypeName(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "map", "struct":
		return "an object"
	case "slice", "array":
		return "an array"
	case "bool":
		return "a boolean"
	default:
		if strings.HasPrefix(kind, "int") || strings.HasPrefix(kind, "uint") || strings.HasPrefix(kind, "float") {
			return "a number"
		}
		return kind
	}
}

// era says which era's requests may call a method.
type era uint8

const (
	eraBoth   era = iota
	eraLegacy     // removed in 2026-07-28 (ping, logging/setLevel, resources/subscribe)
	eraModern     // added in 2026-07-28 (server/discover, subscriptions/listen)
)

// methodTable builds the one method table from the server's providers.
func (s *Server) methodTable(e *Engine) map[string]method {
	t := map[string]method{
		MethodPing:                {handle: func(context.Context, *Request) (any, error) { return emptyObject, nil }, beforeInit: true, era: eraLegacy},
		MethodServerDiscover:      {handle: e.discover, era: eraModern},
		MethodSubscriptionsListen: {handle: e.listen, era: eraModern, long: true},
		MethodLoggingSetLevel: {era: eraLegacy, handle: typed(func(_ context.Context, r *Request, p *SetLevelParams) (any, error) {
			lvl, ok := parseLevel(p.Level)
			if !ok {
				return nil, protocolError(CodeInvalidParams, fmt.Sprintf("unknown log level %q", p.Level),
					"MCP log levels are syslog's", "use one of "+strings.Join(levelNames[:], ", "))
			}
			r.s.logLevel.Store(int32(lvl))
			return emptyObject, nil
		})},
	}
	if s.Prompts != nil {
		t[MethodPromptsList] = method{handle: typed(func(ctx context.Context, r *Request, p *PaginatedParams) (any, error) {
			all, err := s.Prompts.ListPrompts(ctx, r)
			if err != nil {
				return nil, err
			}
			page, next, err := paginate(all, p.Cursor, s.pageSize(), func(p Prompt) string { return p.Name })
			if err != nil {
				return nil, err
			}
			return &ListPromptsResult{Prompts: nonNil(page), NextCursor: next, Meta: s.listMeta(ctx, r)}, nil
		})}
		t[MethodPromptsGet] = method{handle: typed(func(ctx context.Context, r *Request, p *GetPromptParams) (any, error) {
			if p.Name == "" {
				return nil, protocolError(CodeInvalidParams, "prompts/get needs a name",
					`params.name is missing or empty`, "pass the name of a prompt from prompts/list")
			}
			return s.Prompts.GetPrompt(ctx, r, p)
		})}
	}
	if s.Tools != nil {
		t[MethodToolsList] = method{handle: typed(func(ctx context.Context, r *Request, p *PaginatedParams) (any, error) {
			all, err := s.Tools.ListTools(ctx, r)
			if err != nil {
				return nil, err
			}
			page, next, err := paginate(all, p.Cursor, s.pageSize(), func(t Tool) string { return t.Name })
			if err != nil {
				return nil, err
			}
			return &ListToolsResult{Tools: nonNil(page), NextCursor: next, Meta: s.listMeta(ctx, r)}, nil
		})}
		t[MethodToolsCall] = method{handle: typed(func(ctx context.Context, r *Request, p *CallToolParams) (any, error) {
			if p.Name == "" {
				return nil, protocolError(CodeInvalidParams, "tools/call needs a name",
					"params.name is missing or empty", "pass the name of a tool from tools/list")
			}
			return s.Tools.CallTool(ctx, r, p)
		})}
	}
	if s.Resources != nil {
		t[MethodResourcesList] = method{handle: typed(func(ctx context.Context, r *Request, p *PaginatedParams) (any, error) {
			all, err := s.Resources.ListResources(ctx, r)
			if err != nil {
				return nil, err
			}
			page, next, err := paginate(all, p.Cursor, s.pageSize(), func(r Resource) string { return r.URI })
			if err != nil {
				return nil, err
			}
			return &ListResourcesResult{Resources: nonNil(page), NextCursor: next, Meta: s.listMeta(ctx, r)}, nil
		})}
		t[MethodResourceTemplatesList] = method{handle: typed(func(ctx context.Context, r *Request, p *PaginatedParams) (any, error) {
			all, err := s.Resources.ListResourceTemplates(ctx, r)
			if err != nil {
				return nil, err
			}
			page, next, err := paginate(all, p.Cursor, s.pageSize(), func(t ResourceTemplate) string { return t.URITemplate })
			if err != nil {
				return nil, err
			}
			return &ListResourceTemplatesResult{ResourceTemplates: nonNil(page), NextCursor: next, Meta: s.listMeta(ctx, r)}, nil
		})}
		t[MethodResourcesRead] = method{handle: typed(func(ctx context.Context, r *Request, p *ReadResourceParams) (any, error) {
			if p.URI == "" {
				return nil, protocolError(CodeInvalidParams, "resources/read needs a uri",
					"params.uri is missing or empty", "pass a uri from resources/list")
			}
			res, err := s.Resources.ReadResource(ctx, r, p.URI)
			if err != nil {
				return nil, withURI(err, p.URI)
			}
			return res, nil
		})}
		// A session keeps only subscriptions to resources that are there,
		// of a bounded length and number: each is held for the session's
		// life.
		t[MethodResourcesSubscribe] = method{era: eraLegacy, handle: typed(func(ctx context.Context, r *Request, p *ReadResourceParams) (any, error) {
			if p.URI == "" {
				return nil, protocolError(CodeInvalidParams, "resources/subscribe needs a uri",
					"params.uri is missing or empty", "pass a uri from resources/list")
			}
			if err := checkURI("params.uri", p.URI); err != nil {
				return nil, err
			}
			if err := s.Resources.CheckResource(ctx, r, p.URI); err != nil {
				return nil, withURI(err, p.URI)
			}
			if err := r.s.subscribe(p.URI); err != nil {
				return nil, err
			}
			return emptyObject, nil
		})}
		t[MethodResourcesUnsubscribe] = method{era: eraLegacy, handle: typed(func(_ context.Context, r *Request, p *ReadResourceParams) (any, error) {
			r.s.unsubscribe(p.URI)
			return emptyObject, nil
		})}
	}
	if s.Completion != nil {
		t[MethodCompletionComplete] = method{handle: typed(func(ctx context.Context, r *Request, p *CompleteParams) (any, error) {
			return s.Completion.Complete(ctx, r, p)
		})}
	}
	// Ours, not the ones Methods adds or replaces below, which may ask the
	// client something.
	for _, name := range []string{MethodPing, MethodServerDiscover, MethodLoggingSetLevel, MethodPromptsList, MethodPromptsGet, MethodToolsList,
		MethodResourcesList, MethodResourceTemplatesList, MethodResourcesRead, MethodResourcesSubscribe,
		MethodResourcesUnsubscribe, MethodCompletionComplete} {
		if m, ok := t[name]; ok {
			m.quick = true
			t[name] = m
		}
	}
	for name, h := range s.Methods {
		t[name] = method{handle: h}
	}
	return t
}

// withURI names uri in the details of a resource-not-found fault that does
// not name it: both eras' specifications put it in error.data.uri (see
// specData), where clients look for the resource they asked for.
func withURI(err error, uri string) error {
	f := fault.As(err)
	if f == nil || f.Code != fault.ResourceNotFound {
		return err
	}
	if _, ok := f.Details["uri"]; ok {
		return err
	}
	g := *f
	g.Details = make(map[string]any, len(f.Details)+1)
	for k, v := range f.Details {
		g.Details[k] = v
	}
	g.Details["uri"] = uri
	return &g
}

func (s *Server) capabilities() ServerCapabilities {
	var c ServerCapabilities
	if s.Prompts != nil {
		c.Prompts = &ListChangedCapability{ListChanged: true}
	}
	if s.Tools != nil {
		c.Tools = &ListChangedCapability{ListChanged: true}
	}
	if s.Resources != nil {
		c.Resources = &ResourcesCapability{Subscribe: true, ListChanged: true}
	}
	if s.Completion != nil {
		c.Completions = &struct{}{}
	}
	c.Logging = &struct{}{}
	return c
}

func (s *Server) pageSize() int {
	if s.PageSize > 0 {
		return s.PageSize
	}
	return 100
}

var emptyObject = json.RawMessage("{}")

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// paginate cuts one page out of a deterministic list. Its cursors name
// the item the next page starts at, so a list that changed between pages
// is reported rather than silently skipping or repeating items.
func paginate[T any](all []T, c string, size int, key func(T) string) ([]T, string, error) {
	start, err := cursor.Start(all, c, key)
	switch {
	case errors.Is(err, cursor.ErrInvalid):
		return nil, "", &fault.Error{Code: CodeInvalidParams, What: fmt.Sprintf("invalid cursor %q", c),
			Why: "cursors come only from a previous nextCursor, and this one is not one of ours",
			How: "start again without a cursor"}
	case err != nil:
		return nil, "", &fault.Error{Code: CodeInvalidParams, What: "the list changed since the previous page",
			Why: "items were added or removed before the cursor's place, so going on would skip or repeat some",
			How: "start again without a cursor"}
	}
	end := start + size
	if end >= len(all) {
		return all[start:], "", nil
	}
	return all[start:end], cursor.Encode(end, key(all[end])), nil
}

// discover answers server/discover.
func (e *Engine) discover(context.Context, *Request) (any, error) {
	return &DiscoverResult{SupportedVersions: AllVersions(), Capabilities: e.caps, Instructions: e.srv.Instructions}, nil
}

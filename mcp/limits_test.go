package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/google/go-cmp/cmp"
)

// numbered serves the resources test://n/N, N a number of any length:
// whatever a test counts or lengthens is there.
type numbered struct{}

func (numbered) ListResources(context.Context, *mcp.Request) ([]mcp.Resource, error) {
	return []mcp.Resource{{URI: "test://n/1", Name: "1"}}, nil
}

func (numbered) ListResourceTemplates(context.Context, *mcp.Request) ([]mcp.ResourceTemplate, error) {
	return nil, nil
}

func (n numbered) ReadResource(ctx context.Context, r *mcp.Request, uri string) (*mcp.ReadResourceResult, error) {
	if err := n.CheckResource(ctx, r, uri); err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: uri, Text: "n"}}}, nil
}

func (numbered) CheckResource(_ context.Context, _ *mcp.Request, uri string) error {
	if n, ok := strings.CutPrefix(uri, "test://n/"); ok && n != "" && strings.Trim(n, "0123456789") == "" {
		return nil
	}
	return &fault.Error{Code: fault.ResourceNotFound, What: "unknown resource", Why: "only test://n/N is served", How: "pick one"}
}

// numberedURI is a URI numbered serves, of exactly size bytes.
func numberedURI(size int) string {
	return "test://n/" + strings.Repeat("7", size-len("test://n/"))
}

func numberedEngine(t *testing.T, opts mcp.EngineOptions) *mcp.Engine {
	t.Helper()
	e := mcp.NewEngine(&mcp.Server{Info: mcp.Implementation{Name: "t", Version: "1"}, Resources: numbered{}}, opts)
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	return e
}

// wantLimit fails t unless m is a -32602 refusal naming field and limit.
func wantLimit(t *testing.T, m mcptest.Message, field string, limit int) {
	t.Helper()
	if m.Error == nil || m.Error.Code != -32602 || m.Error.Data.Code != mcp.CodeInvalidParams {
		t.Fatalf("got %s, want a -32602 %s error", m.Raw, mcp.CodeInvalidParams)
	}
	d := m.Error.Data
	if d.Details["field"] != field || d.Details["limit"] != float64(limit) {
		t.Errorf("error.data.details = %v, want field %q and limit %d", d.Details, field, limit)
	}
	if !strings.Contains(m.Error.Message, field) || !strings.Contains(m.Error.Message, strconv.Itoa(limit)) || d.Why == "" || d.How == "" {
		t.Errorf("error %q (why %q, how %q) must name %s and its limit %d, and say why and how", m.Error.Message, d.Why, d.How, field, limit)
	}
}

// wantNotFound fails t unless m is the revision's resource-not-found
// error naming uri.
func wantNotFound(t *testing.T, m mcptest.Message, code int64, uri string) {
	t.Helper()
	if m.Error == nil || m.Error.Code != code || m.Error.Data.Code != fault.ResourceNotFound {
		t.Fatalf("got %s, want a %d %s error", m.Raw, code, fault.ResourceNotFound)
	}
	var data struct {
		URI string `json:"uri"`
	}
	var env struct {
		Error struct{ Data json.RawMessage } `json:"error"`
	}
	if err := json.Unmarshal(m.Raw, &env); err != nil || json.Unmarshal(env.Error.Data, &data) != nil || data.URI != uri {
		t.Errorf("error.data %s: want uri %q", env.Error.Data, uri)
	}
}

// TestSubscribeBounds: resources/subscribe keeps only resources that are
// there, with URIs of at most MaxURILength bytes, and at most
// MaxSubscriptions of them per session; what it refused is never
// announced to the session.
func TestSubscribeBounds(t *testing.T) {
	const limit = 3
	e := numberedEngine(t, mcp.EngineOptions{MaxSubscriptions: limit})
	c := mcptest.Connect(t, e)
	c.Initialize(t, mcp.LatestVersion)
	id := 0
	subscribe := func(method, uri string) mcptest.Message {
		id++
		return c.Request(t, id, method, map[string]string{"uri": uri})
	}
	ok := func(m mcptest.Message) {
		t.Helper()
		if m.Error != nil || string(m.Result) != "{}" {
			t.Fatalf("got %s, want {}", m.Raw)
		}
	}

	wantNotFound(t, subscribe(mcp.MethodResourcesSubscribe, "test://elsewhere"), -32002, "test://elsewhere")
	wantLimit(t, subscribe(mcp.MethodResourcesSubscribe, numberedURI(mcp.MaxURILength+1)), "params.uri", mcp.MaxURILength)
	ok(subscribe(mcp.MethodResourcesSubscribe, numberedURI(mcp.MaxURILength)))
	ok(subscribe(mcp.MethodResourcesSubscribe, "test://n/1"))
	ok(subscribe(mcp.MethodResourcesSubscribe, "test://n/2"))
	ok(subscribe(mcp.MethodResourcesSubscribe, "test://n/2")) // again: no new subscription
	wantLimit(t, subscribe(mcp.MethodResourcesSubscribe, "test://n/3"), "params.uri", limit)
	ok(subscribe(mcp.MethodResourcesUnsubscribe, "test://n/1"))
	ok(subscribe(mcp.MethodResourcesSubscribe, "test://n/3"))

	// The refused and the dropped are not announced; the kept are. The
	// last announcement is one that must arrive: had any before it been
	// sent, it would have come first.
	for _, uri := range []string{"test://elsewhere", numberedURI(mcp.MaxURILength + 1), "test://n/1", "test://n/3"} {
		e.ResourceUpdated(uri)
	}
	n := c.Notification(t, mcp.NotificationResourceUpdated)
	if !strings.Contains(string(n.Params), `"test://n/3"`) {
		t.Fatalf("first update sent: %s, want the one of test://n/3", n.Raw)
	}
}

// listen sends a subscriptions/listen for uris on c's session and returns
// the first message it gets: the acknowledgement or the error.
func listen(t *testing.T, c *mcptest.Client, id int, uris []string) mcptest.Message {
	t.Helper()
	list, err := json.Marshal(uris)
	if err != nil {
		t.Fatal(err)
	}
	c.Send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"subscriptions/listen","params":{%s,"notifications":{"resourceSubscriptions":%s}}}`,
		id, meta(""), list))
	return c.Next(t)
}

// TestListenBounds: a subscriptions/listen stream keeps at most
// MaxSubscriptions resources, each of at most MaxURILength bytes, each one
// the server serves; otherwise the listen is answered with the error and
// no stream is kept.
func TestListenBounds(t *testing.T) {
	const limit = 4
	const field = "params.notifications.resourceSubscriptions"
	many := make([]string, limit+1)
	for i := range many {
		many[i] = "test://n/" + strconv.Itoa(i)
	}
	tests := []struct {
		name  string
		uris  []string
		check func(*testing.T, mcptest.Message)
	}{
		{"too many", many, func(t *testing.T, m mcptest.Message) { wantLimit(t, m, field, limit) }},
		{"too long", []string{"test://n/1", numberedURI(mcp.MaxURILength + 1)}, func(t *testing.T, m mcptest.Message) {
			wantLimit(t, m, field+"[1]", mcp.MaxURILength)
		}},
		{"not served", []string{"test://n/1", "test://elsewhere"}, func(t *testing.T, m mcptest.Message) {
			wantNotFound(t, m, -32602, "test://elsewhere")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := numberedEngine(t, mcp.EngineOptions{MaxSubscriptions: limit})
			c := mcptest.Connect(t, e)
			m := listen(t, c, 1, tc.uris)
			if string(m.ID) != "1" {
				t.Fatalf("got %s, want the listen's error", m.Raw)
			}
			tc.check(t, m)
			wantListeners(t, e, 0)
		})
	}

	t.Run("at the limits", func(t *testing.T) {
		e := numberedEngine(t, mcp.EngineOptions{MaxSubscriptions: limit})
		c := mcptest.Connect(t, e)
		uris := append(many[:limit-1:limit-1], numberedURI(mcp.MaxURILength))
		ack := listen(t, c, 1, uris)
		var p struct {
			Notifications mcp.SubscriptionFilter `json:"notifications"`
		}
		if err := json.Unmarshal(ack.Params, &p); err != nil || ack.Method != mcp.NotificationSubscriptionsAcknowledged {
			t.Fatalf("got %s, want the acknowledgement", ack.Raw)
		}
		if diff := cmp.Diff(uris, p.Notifications.ResourceSubscriptions); diff != "" {
			t.Errorf("acknowledged subscriptions (-want +got):\n%s", diff)
		}
		wantListeners(t, e, 1)
		if ack := listen(t, c, 2, []string{"test://n/1", "test://n/2", "test://n/1"}); !strings.Contains(string(ack.Params), `"resourceSubscriptions":["test://n/1","test://n/2"]`) {
			t.Errorf("a URI asked for twice: acknowledged %s, want it once", ack.Params)
		}
		e.ResourceUpdated(uris[limit-1])
		if n := c.Next(t); n.Method != mcp.NotificationResourceUpdated || !strings.Contains(string(n.Params), uris[limit-1]) {
			t.Fatalf("got %s, want the update of the longest URI", n.Raw)
		}
	})
}

// TestDefaultMaxSubscriptions: without MaxSubscriptions, the engine
// keeps DefaultMaxSubscriptions per stream, and refuses one more.
func TestDefaultMaxSubscriptions(t *testing.T) {
	e := numberedEngine(t, mcp.EngineOptions{})
	c := mcptest.Connect(t, e)
	uris := make([]string, mcp.DefaultMaxSubscriptions+1)
	for i := range uris {
		uris[i] = "test://n/" + strconv.Itoa(i)
	}
	wantLimit(t, listen(t, c, 1, uris), "params.notifications.resourceSubscriptions", mcp.DefaultMaxSubscriptions)
	if ack := listen(t, c, 2, uris[1:]); ack.Method != mcp.NotificationSubscriptionsAcknowledged {
		t.Fatalf("%d subscriptions: got %s, want the acknowledgement", mcp.DefaultMaxSubscriptions, ack.Raw)
	}
}

// TestInitializeBounds: initialize refuses a clientInfo field over
// MaxClientInfoField bytes and capabilities over MaxCapabilitiesSize with
// -32602 naming the field and the limit, and leaves the session
// uninitialized; at the limits it succeeds. A modern request's _meta is
// held to the same bounds.
func TestInitializeBounds(t *testing.T) {
	long := strings.Repeat("x", mcp.MaxClientInfoField+1)
	// capabilities of exactly size bytes.
	caps := func(size int) json.RawMessage {
		return json.RawMessage(`{"experimental":{"pad":"` + strings.Repeat("x", size-len(`{"experimental":{"pad":""}}`)) + `"}}`)
	}
	tests := []struct {
		name  string
		info  map[string]string
		caps  json.RawMessage
		field string // "": accepted
		limit int
	}{
		{"name", map[string]string{"name": long, "version": "1"}, json.RawMessage(`{}`), "params.clientInfo.name", mcp.MaxClientInfoField},
		{"title", map[string]string{"name": "c", "title": long, "version": "1"}, json.RawMessage(`{}`), "params.clientInfo.title", mcp.MaxClientInfoField},
		{"version", map[string]string{"name": "c", "version": long}, json.RawMessage(`{}`), "params.clientInfo.version", mcp.MaxClientInfoField},
		{"capabilities", map[string]string{"name": "c", "version": "1"}, caps(mcp.MaxCapabilitiesSize + 1), "params.capabilities", mcp.MaxCapabilitiesSize},
		{"at the limits", map[string]string{"name": long[1:], "title": long[1:], "version": long[1:]}, caps(mcp.MaxCapabilitiesSize), "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := numberedEngine(t, mcp.EngineOptions{})
			c := mcptest.Connect(t, e)
			m := c.Request(t, 1, mcp.MethodInitialize, map[string]any{"protocolVersion": mcp.LatestVersion,
				"capabilities": tc.caps, "clientInfo": tc.info})
			if tc.field == "" {
				if m.Error != nil || !c.S.Initialized() {
					t.Fatalf("got %s, want the session initialized", m.Raw)
				}
				return
			}
			wantLimit(t, m, tc.field, tc.limit)
			if c.S.Initialized() {
				t.Error("the session was initialized")
			}
			// The client may try again with less.
			c.Initialize(t, mcp.LatestVersion)
		})
	}

	modern := []struct {
		name, meta, field string
		limit             int
	}{
		{"modern clientInfo",
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"` + long + `"}}`,
			`params._meta["io.modelcontextprotocol/clientInfo"].version`, mcp.MaxClientInfoField},
		{"modern capabilities",
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + string(caps(mcp.MaxCapabilitiesSize+1)) + `}`,
			`params._meta["io.modelcontextprotocol/clientCapabilities"]`, mcp.MaxCapabilitiesSize},
	}
	for _, tc := range modern {
		t.Run(tc.name, func(t *testing.T) {
			e := numberedEngine(t, mcp.EngineOptions{})
			c := mcptest.Connect(t, e)
			c.Send(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{` + tc.meta + `,"notifications":{"resourcesListChanged":true}}}`)
			wantLimit(t, c.Next(t), tc.field, tc.limit)
			wantListeners(t, e, 0)
		})
	}
}

// TestSubscriptionsShareTheServersTotal: the resource subscriptions of
// all sessions and listen streams together take at most
// MaxSubscriptionBytes; one that would go over it is refused with -32602
// naming the field and the limit, whichever session or stream asks, and
// fits once others have ended (an unsubscribe, a session's end).
func TestSubscriptionsShareTheServersTotal(t *testing.T) {
	each := len("test://n/1") + mcp.SubscriptionCost
	limit := 3 * each
	e := numberedEngine(t, mcp.EngineOptions{MaxSubscriptionBytes: int64(limit)})
	a, b := mcptest.Connect(t, e), mcptest.Connect(t, e)
	a.Initialize(t, mcp.LatestVersion)
	b.Initialize(t, mcp.LatestVersion)
	id := 0
	subscribe := func(c *mcptest.Client, method, uri string) mcptest.Message {
		id++
		return c.Request(t, id, method, map[string]string{"uri": uri})
	}
	ok := func(m mcptest.Message) {
		t.Helper()
		if m.Error != nil || string(m.Result) != "{}" {
			t.Fatalf("got %s, want {}", m.Raw)
		}
	}
	ok(subscribe(a, mcp.MethodResourcesSubscribe, "test://n/1"))
	ok(subscribe(a, mcp.MethodResourcesSubscribe, "test://n/2"))
	ok(subscribe(b, mcp.MethodResourcesSubscribe, "test://n/3"))
	wantLimit(t, subscribe(b, mcp.MethodResourcesSubscribe, "test://n/4"), "params.uri", limit)
	l := mcptest.Connect(t, e)
	wantLimit(t, listen(t, l, 1, []string{"test://n/5"}), "params.notifications.resourceSubscriptions", limit)
	wantListeners(t, e, 0)

	ok(subscribe(a, mcp.MethodResourcesUnsubscribe, "test://n/1"))
	ok(subscribe(b, mcp.MethodResourcesSubscribe, "test://n/4"))
	b.S.Close() // its two subscriptions end with it
	if ack := listen(t, l, 2, []string{"test://n/5", "test://n/6"}); ack.Method != mcp.NotificationSubscriptionsAcknowledged {
		t.Fatalf("once others ended: got %s, want the acknowledgement", ack.Raw)
	}
	wantListeners(t, e, 1)
	wantLimit(t, subscribe(a, mcp.MethodResourcesSubscribe, "test://n/7"), "params.uri", limit)
}

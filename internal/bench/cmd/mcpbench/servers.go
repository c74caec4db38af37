package main

import (
	"path/filepath"
)

// server is one of the servers compared: how to start it on each
// transport, and the name of its render tool.
type server struct {
	name string
	// stdio is its command line for the stdio transport.
	stdio func() []string
	// listen is its command line serving transport ("sse", "http" or
	// "http-stateless") on addr; the path is /sse or /mcp.
	listen func(transport, addr string) []string
	// tool is its render tool's name.
	tool string
	// toolsOnly marks a variant that differs from another only in how it
	// runs tools, so it joins the tool scenarios alone.
	toolsOnly bool
	// floor marks httpfloor, no MCP server but net/http's cost per
	// request: it joins the Streamable HTTP request scenario alone, and
	// has no stdio (nor rendering to check).
	floor bool
}

// runs reports whether s takes part in scenario sc.
func (s *server) runs(sc scenario) bool {
	switch {
	case s.toolsOnly:
		return sc.tools
	case s.floor:
		return sc.kind == kindStreamable
	}
	return true
}

// Names of the servers, as the report prints them.
const (
	flowyprompt    = "flowyprompt"
	mcpGo          = "mcp-go"
	mcpGoValidate  = "mcp-go+validate"
	goSDK          = "go-sdk"
	baselineServer = mcpGo
	// flowyprompt as another build of it (-before), to measure a change
	// in the same run as the one it changes.
	flowypromptBefore = "flowyprompt-before"
	// flowyprompt with --log-level error: what its defaults (the audit
	// log's line per request) cost, measured beside them.
	flowypromptQuiet = "flowyprompt-quiet"
	// httpFloor is internal/bench/cmd/httpfloor: what net/http alone
	// costs per request, the floor of any server built on it.
	httpFloor = "httpfloor"
)

// defaultServers are the servers a run compares unless -servers says.
var defaultServers = []string{flowyprompt, flowypromptQuiet, mcpGo, goSDK, mcpGoValidate, httpFloor}

// servers returns every server the harness knows, in report order, with
// binaries in bin and the templates in dir; fpArgs are added to
// flowyprompt's command line. before, when set, is another flowyprompt
// binary, served as flowyprompt-before.
func servers(bin, dir string, fpArgs []string, before string) []*server {
	mg := filepath.Join(bin, "peer-mcpgo")
	gs := filepath.Join(bin, "peer-gosdk")
	all := []*server{
		flowypromptServer(flowyprompt, filepath.Join(bin, "flowyprompt"), dir, fpArgs),
		flowypromptServer(flowypromptQuiet, filepath.Join(bin, "flowyprompt"), dir, append([]string{"--log-level", "error"}, fpArgs...)),
		{
			name:  mcpGo,
			stdio: func() []string { return []string{mg, "-templates", dir} },
			listen: func(tr, addr string) []string {
				return append([]string{mg, "-addr", addr, "-templates", dir}, peerTransport(tr)...)
			},
			tool: "render_template",
		},
		{
			name:  goSDK,
			stdio: func() []string { return []string{gs, "-templates", dir} },
			listen: func(tr, addr string) []string {
				return append([]string{gs, "-addr", addr, "-templates", dir}, peerTransport(tr)...)
			},
			tool: "render_template",
		},
		{
			name:  mcpGoValidate,
			stdio: func() []string { return []string{mg, "-validate", "-templates", dir} },
			listen: func(tr, addr string) []string {
				return append([]string{mg, "-validate", "-addr", addr, "-templates", dir}, peerTransport(tr)...)
			},
			tool:      "render_template",
			toolsOnly: true,
		},
		{
			name: httpFloor,
			listen: func(_, addr string) []string {
				return []string{filepath.Join(bin, "httpfloor"), "-addr", addr, "-templates", dir}
			},
			floor: true,
		},
	}
	if before != "" {
		all = append(all, flowypromptServer(flowypromptBefore, before, dir, fpArgs))
	}
	return all
}

// peerTransport is a peer's flags for transport: the stateless variant of
// Streamable HTTP is its http transport with -stateless.
func peerTransport(tr string) []string {
	if tr == transportStateless {
		return []string{"-transport", "http", "-stateless"}
	}
	return []string{"-transport", tr}
}

// flowypromptServer is the flowyprompt binary fp, named name, run at its
// defaults (the log level info, so with the audit log) but for fpArgs.
// Its stderr, the audit log's lines among it, is read and discarded as a
// client's log window would read it.
func flowypromptServer(name, fp, dir string, fpArgs []string) *server {
	return &server{
		name: name,
		stdio: func() []string {
			return append([]string{fp, "serve", "--templates", dir}, fpArgs...)
		},
		// flowyprompt serves /sse and /mcp from one HTTP listener; the
		// stateless revision's requests come to the same /mcp.
		listen: func(_, addr string) []string {
			return append([]string{fp, "serve", "--transport", "http", "--addr", addr, "--templates", dir}, fpArgs...)
		},
		tool: "flowyprompt_render_template",
	}
}

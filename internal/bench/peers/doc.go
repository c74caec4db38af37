// Package peers holds the reference servers: MCP servers built on the two
// best-known Go MCP libraries, serving the same template folder flowyprompt
// serves, so the benchmark harness (cmd/mcpbench) can compare like with
// like.
//
// They live in the harness module (internal/bench), not the product's, so
// that flowyprompt never depends on the libraries it is measured against:
// gosdk builds on github.com/modelcontextprotocol/go-sdk and mcpgo on
// github.com/mark3labs/mcp-go. Build them from the module's folder:
//
//	cd internal/bench && go build -o ../../bin/peer-gosdk ./peers/gosdk
//	cd internal/bench && go build -o ../../bin/peer-mcpgo ./peers/mcpgo
//
// Both take -transport stdio|sse|http, -addr and -templates, register one
// prompt per template and a render_template tool, and render exactly the
// text flowyprompt renders (peers_test.go checks that). With -stateless,
// http runs the library's stateless mode (go-sdk:
// StreamableHTTPOptions{Stateless: true}; mcp-go: server.WithStateLess),
// where each request stands alone: the mode in which both serve protocol
// 2026-07-28, which has no initialize and no session.
package peers

// Package peers is the root of the reference-server module: MCP servers
// built on the two best-known Go MCP libraries, serving the same template
// folder flowyprompt serves, so the benchmark harness (cmd/mcpbench) can
// compare like with like.
//
// It is a module of its own so that flowyprompt never depends on the
// libraries it is measured against: gosdk builds on
// github.com/modelcontextprotocol/go-sdk and mcpgo on
// github.com/mark3labs/mcp-go. Build them from this folder:
//
//	cd internal/bench/peers && go build -o ../../../bin/peer-gosdk ./gosdk
//	cd internal/bench/peers && go build -o ../../../bin/peer-mcpgo ./mcpgo
//
// Both take -transport stdio|sse|http, -addr and -templates, register one
// prompt per template and a render_template tool, and render exactly the
// text flowyprompt renders (peers_test.go checks that).
package peers

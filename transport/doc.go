// Package transport groups the transports that feed the mcp engine:
// stdio (Claude Desktop), legacy HTTP+SSE (Void IDE) and Streamable HTTP
// (MCP Inspector and modern clients). Transports only frame bytes into
// messages for a session, on the contract written in mcp/transport.go;
// all protocol logic lives in package mcp. Every HTTP byte goes through
// net/http.
package transport

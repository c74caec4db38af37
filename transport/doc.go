// Package transport groups the transports that feed the mcp engine:
// stdio (Claude Desktop), legacy HTTP+SSE (Void IDE) and Streamable HTTP
// (MCP Inspector and modern clients). Transports only frame bytes into
// messages for a session; all protocol logic lives in package mcp.
package transport

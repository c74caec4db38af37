// Package templates holds the prompt-template model: parsing and validation
// against the embedded JSON Schema, placeholder extraction, the immutable
// Catalog that handlers read, and the Sources that feed it (the embedded
// example library, a watched directory; the GitHub source lives in package
// github and satisfies the same Source interface).
//
// The package never imports mcp: it knows nothing of the protocol.
package templates

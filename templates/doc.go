// Package templates holds the prompt-template model: parsing and validation
// against the embedded JSON Schema, placeholder extraction, the immutable
// Catalog that handlers read, the Library that swaps catalogs in, and the
// Source interface that feeds it, with the embedded example library as one
// Source. The folder source lives in package templates/folder and the
// GitHub source in package github; both satisfy Source.
//
// The package does no I/O of its own beyond reading the examples compiled
// into the binary: no files, no network (a test in internal/arch enforces
// it), so render and everything else built on the model stays pure. It
// never imports mcp: it knows nothing of the protocol.
package templates

// Package fault is the one error type the product's packages share: a stable
// symbolic code plus what failed, why, and how to fix it. Package mcp maps it
// to a JSON-RPC error (code and error.data) and tools render it as an
// isError result, so every layer explains failures the same way.
package fault

import (
	"errors"
	"time"
)

// Symbolic codes. They are part of our API: clients and scripts match on them.
const (
	TemplateNotFound        = "TEMPLATE_NOT_FOUND"
	MissingRequiredVariable = "MISSING_REQUIRED_VARIABLE"
	InvalidArgument         = "INVALID_ARGUMENT"
	InvalidCursor           = "INVALID_CURSOR"
	TemplateTooLarge        = "TEMPLATE_TOO_LARGE"
	InvalidTemplate         = "INVALID_TEMPLATE"
	GitHubAuthFailed        = "GITHUB_AUTH_FAILED"
	GitHubRateLimited       = "GITHUB_RATE_LIMITED"
	RateLimited             = "RATE_LIMITED" // a budget of the server's own was spent
	GitHubNotFound          = "GITHUB_NOT_FOUND"
	NetworkError            = "NETWORK_ERROR"
	WriteDisabled           = "WRITE_DISABLED"
	WriteConflict           = "WRITE_CONFLICT"
	NameNotAllowed          = "NAME_NOT_ALLOWED"
	ToolNotFound            = "TOOL_NOT_FOUND"
	ResourceNotFound        = "RESOURCE_NOT_FOUND"
	RequestTimeout          = "REQUEST_TIMEOUT"
	Internal                = "INTERNAL_ERROR"
	VersionsUnsupported     = "VERSIONS_UNSUPPORTED"
	VersionNotFound         = "VERSION_NOT_FOUND"
	TestFailed              = "TEST_FAILED"       // a test a template carries does not hold
	UnknownLabel            = "UNKNOWN_LABEL"     // a label no source names
	PermissionDenied        = "PERMISSION_DENIED" // a credential (GitHub token, member) may not do this
)

// Error is a failure explained for a person or a model.
type Error struct {
	Code        string         // one of the symbolic codes above
	What        string         // what failed, one sentence
	Why         string         // why it failed
	How         string         // how to fix it
	Suggestions []string       // e.g. "did you mean" names
	RetryAfter  time.Duration  // when waiting helps
	Details     map[string]any // structured extras (sizes, JSON pointers, ...)
	Err         error          // the cause, if any
}

// Error returns "what: why", lowercase-friendly for wrapping.
func (e *Error) Error() string {
	switch {
	case e.Why == "":
		return e.What
	case e.What == "":
		return e.Why
	}
	return e.What + ": " + e.Why
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// New returns an Error with the given code and explanation.
func New(code, what, why, how string) *Error {
	return &Error{Code: code, What: what, Why: why, How: how}
}

// As returns the *Error in err's chain, or nil.
func As(err error) *Error {
	var f *Error
	if errors.As(err, &f) {
		return f
	}
	return nil
}

// CodeOf returns err's symbolic code, or Internal when it has none.
func CodeOf(err error) string {
	if f := As(err); f != nil && f.Code != "" {
		return f.Code
	}
	return Internal
}

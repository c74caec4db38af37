package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"math"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/sourcegraph/jsonrpc2"
)

// Symbolic codes for protocol-level failures; product codes live in
// package fault.
const (
	CodeParseError     = "PARSE_ERROR"
	CodeInvalidRequest = "INVALID_REQUEST"
	CodeMethodNotFound = "METHOD_NOT_FOUND"
	CodeInvalidParams  = "INVALID_PARAMS"
	CodeNotInitialized = "NOT_INITIALIZED"
	CodeMessageTooBig  = "MESSAGE_TOO_LARGE"
)

// Symbolic codes of the failures the HTTP transports answer with an HTTP
// status before a message reaches a session. They are mapped to JSON-RPC
// codes here with the others, so a client matches one error.data.code
// whatever layer refused it.
const (
	CodeSessionRequired    = "SESSION_REQUIRED"
	CodeSessionNotFound    = "SESSION_NOT_FOUND"
	CodeTooManySessions    = "TOO_MANY_SESSIONS"
	CodeClientLimit        = "CLIENT_LIMIT_REACHED" // one client's cap; TOO_MANY_SESSIONS is the server's
	CodeServerBusy         = "SERVER_BUSY"          // the server's budget of messages in flight is spent
	CodeBodyTooLarge       = "BODY_TOO_LARGE"
	CodeBadRequest         = "BAD_REQUEST"
	CodeNotAcceptable      = "NOT_ACCEPTABLE"
	CodeUnsupportedMedia   = "UNSUPPORTED_MEDIA_TYPE"
	CodeUnsupportedVersion = "UNSUPPORTED_PROTOCOL_VERSION"
	CodeMethodNotAllowed   = "METHOD_NOT_ALLOWED"
	CodeStreamConflict     = "STREAM_ALREADY_OPEN"
	CodeStreamNotResumable = "STREAM_NOT_RESUMABLE"
	CodeForbiddenHost      = "FORBIDDEN_HOST"
	CodeForbiddenOrigin    = "FORBIDDEN_ORIGIN"
	CodeUnauthorized       = "UNAUTHORIZED"
	// CodeInsufficientScope: the member's access token is valid but does
	// not grant the scope the request needs.
	CodeInsufficientScope = "INSUFFICIENT_SCOPE"
	// CodeAuthUnavailable: the authorization server has not been reached
	// yet, or its token introspection endpoint gave no answer, so the
	// token cannot be checked.
	CodeAuthUnavailable = "AUTH_SERVER_UNREACHABLE"
	CodeNotFound        = "NOT_FOUND"
	CodeShuttingDown    = "SHUTTING_DOWN"
	// CodeHeaderMismatch: an HTTP header that mirrors the body (Mcp-Method,
	// Mcp-Name, MCP-Protocol-Version, Mcp-Param-*) is missing or differs.
	CodeHeaderMismatch = "HEADER_MISMATCH"
	// CodeMissingCapability: the request needs a client capability its
	// _meta does not declare; Details["requiredCapabilities"] names it.
	CodeMissingCapability = "MISSING_REQUIRED_CLIENT_CAPABILITY"
)

// JSON-RPC codes that jsonrpc2 does not name.
const (
	// rpcServerError is JSON-RPC's generic implementation-defined error,
	// for refusals that are not about the message itself.
	rpcServerError = -32000
	// rpcSessionNotFound is what the TypeScript SDK's server sends for an
	// unknown session, so SDK clients recognise it.
	rpcSessionNotFound = -32001
	// rpcResourceNotFound is MCP's "resource not found" up to 2025-11-25;
	// the modern era answers it with invalid params.
	rpcResourceNotFound = -32002
)

// The JSON-RPC codes the modern era defines.
const (
	RPCHeaderMismatch     = -32020
	RPCMissingCapability  = -32021
	RPCUnsupportedVersion = -32022
)

// rpcCodes maps every symbolic code to its JSON-RPC code. It is the one
// table behind ErrorObject; a code missing here is an internal error.
var rpcCodes = map[string]int64{
	CodeParseError:                jsonrpc2.CodeParseError,
	CodeInvalidRequest:            jsonrpc2.CodeInvalidRequest,
	CodeNotInitialized:            jsonrpc2.CodeInvalidRequest,
	CodeMessageTooBig:             jsonrpc2.CodeInvalidRequest,
	CodeMethodNotFound:            jsonrpc2.CodeMethodNotFound,
	CodeInvalidParams:             jsonrpc2.CodeInvalidParams,
	fault.TemplateNotFound:        jsonrpc2.CodeInvalidParams,
	fault.MissingRequiredVariable: jsonrpc2.CodeInvalidParams,
	fault.InvalidArgument:         jsonrpc2.CodeInvalidParams,
	fault.InvalidCursor:           jsonrpc2.CodeInvalidParams,
	fault.ToolNotFound:            jsonrpc2.CodeInvalidParams,
	fault.ResourceNotFound:        rpcResourceNotFound,
	fault.InvalidTemplate:         jsonrpc2.CodeInvalidParams,
	fault.TemplateTooLarge:        jsonrpc2.CodeInvalidParams,
	fault.WriteDisabled:           jsonrpc2.CodeInvalidRequest,
	fault.WriteConflict:           jsonrpc2.CodeInternalError,
	fault.NameNotAllowed:          jsonrpc2.CodeInvalidParams,
	fault.GitHubAuthFailed:        jsonrpc2.CodeInternalError,
	fault.GitHubRateLimited:       jsonrpc2.CodeInternalError,
	fault.GitHubNotFound:          jsonrpc2.CodeInternalError,
	fault.NetworkError:            jsonrpc2.CodeInternalError,
	fault.RequestTimeout:          jsonrpc2.CodeInternalError,
	fault.Internal:                jsonrpc2.CodeInternalError,
	fault.VersionsUnsupported:     jsonrpc2.CodeInvalidParams,
	fault.VersionNotFound:         jsonrpc2.CodeInvalidParams,
	fault.UnknownLabel:            jsonrpc2.CodeInvalidParams,
	fault.PermissionDenied:        jsonrpc2.CodeInvalidRequest,
	CodeSessionRequired:           rpcServerError,
	CodeSessionNotFound:           rpcSessionNotFound,
	CodeTooManySessions:           rpcServerError,
	CodeClientLimit:               rpcServerError,
	CodeServerBusy:                rpcServerError,
	CodeBodyTooLarge:              rpcServerError,
	CodeBadRequest:                rpcServerError,
	CodeNotAcceptable:             rpcServerError,
	CodeUnsupportedMedia:          rpcServerError,
	CodeUnsupportedVersion:        RPCUnsupportedVersion,
	CodeHeaderMismatch:            RPCHeaderMismatch,
	CodeMissingCapability:         RPCMissingCapability,
	CodeMethodNotAllowed:          rpcServerError,
	CodeStreamConflict:            rpcServerError,
	CodeStreamNotResumable:        rpcServerError,
	CodeForbiddenHost:             rpcServerError,
	CodeForbiddenOrigin:           rpcServerError,
	CodeUnauthorized:              rpcServerError,
	CodeInsufficientScope:         rpcServerError,
	CodeAuthUnavailable:           rpcServerError,
	CodeNotFound:                  rpcServerError,
	CodeShuttingDown:              rpcServerError,
}

// ErrorData is the error.data object we attach to every error: our
// symbolic code and the what / why / how explanation.
type ErrorData struct {
	Code        string         `json:"code"`
	What        string         `json:"what,omitempty"`
	Why         string         `json:"why,omitempty"`
	How         string         `json:"how,omitempty"`
	Suggestions []string       `json:"suggestions,omitempty"`
	RetryAfter  int64          `json:"retry_after,omitempty"` // seconds
	Details     map[string]any `json:"details,omitempty"`
}

// protocolError builds a protocol-level fault.
func protocolError(code, what, why, how string) *fault.Error {
	return &fault.Error{Code: code, What: what, Why: why, How: how}
}

// modernCodes are the symbolic codes whose JSON-RPC code the modern era
// changed.
var modernCodes = map[string]int64{
	fault.ResourceNotFound: jsonrpc2.CodeInvalidParams,
}

// specData names, per symbolic code, the Details the specification puts at
// the top of error.data (UnsupportedProtocolVersionError's supported and
// requested, MissingRequiredClientCapabilityError's requiredCapabilities,
// a missing resource's uri), where clients look for them.
var specData = map[string][]string{
	CodeUnsupportedVersion: {"supported", "requested"},
	CodeMissingCapability:  {"requiredCapabilities"},
	fault.ResourceNotFound: {"uri"},
}

// ErrorObject maps any error to the JSON-RPC error object we send, with
// the codes of the legacy era (see ErrorObjectFor).
func ErrorObject(err error) *jsonrpc2.Error { return ErrorObjectFor(err, false) }

// ErrorObjectFor maps any error to the JSON-RPC error object we send, with
// the codes of the modern era when modern is set. It is the only place
// error codes are chosen, and it never yields code 0.
func ErrorObjectFor(err error, modern bool) *jsonrpc2.Error {
	var rpcErr *jsonrpc2.Error
	if errors.As(err, &rpcErr) && rpcErr.Code != 0 {
		return rpcErr
	}
	f := fault.As(err)
	if f == nil {
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			f = &fault.Error{Code: fault.RequestTimeout, What: "the request took too long",
				Why: "it did not finish before the server's per-request deadline",
				How: "retry; if it keeps happening, raise --request-timeout", Err: err}
		default:
			f = &fault.Error{Code: fault.Internal, What: "internal error", Why: err.Error(),
				How: "retry; if it persists, report it with the server's log", Err: err}
		}
	}
	code, ok := rpcCodes[f.Code]
	if !ok {
		code = jsonrpc2.CodeInternalError
	}
	if c, ok := modernCodes[f.Code]; ok && modern {
		code = c
	}
	data := ErrorData{Code: f.Code, What: f.What, Why: f.Why, How: f.How,
		Suggestions: f.Suggestions, Details: f.Details}
	if f.RetryAfter > 0 {
		data.RetryAfter = int64(math.Ceil(f.RetryAfter.Seconds()))
	}
	raw, merr := data.marshal(specData[f.Code])
	if merr != nil {
		// Details held something JSON cannot carry; drop them rather than the error.
		data.Details = nil
		raw, _ = data.marshal(nil)
	}
	msg := f.Error()
	if msg == "" {
		msg = f.Code
	}
	rm := json.RawMessage(raw)
	return &jsonrpc2.Error{Code: code, Message: msg, Data: &rm}
}

// marshal encodes d with the named Details lifted to the top of the
// object, beside code and what.
func (d ErrorData) marshal(lift []string) ([]byte, error) {
	if len(lift) == 0 || d.Details == nil {
		return json.Marshal(d)
	}
	raw, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	for _, k := range lift {
		if v, ok := d.Details[k]; ok {
			b, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			obj[k] = b
		}
	}
	return json.Marshal(obj)
}

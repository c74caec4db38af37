package httpserver

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/flowyprompt/flowyprompt/internal/auth"
	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/transport/internal/clientid"
	"github.com/flowyprompt/flowyprompt/transport/internal/httpx"
)

// The paths of the protected resource metadata (RFC 9728): the document
// of the resource PUBLIC_URL/mcp lives at the second, with the
// resource's path appended; the first serves clients that look at the
// root.
const (
	metadataRoot = "/.well-known/oauth-protected-resource"
	metadataMCP  = metadataRoot + "/mcp"
)

// resourceServer is the OAuth 2.1 resource server in front of /mcp, /sse
// and /sse/message (Options.Auth): what the guard needs to check a
// member's token and to challenge a client without one.
type resourceServer struct {
	v *auth.Verifier
	// metadata is the RFC 9728 document, marshalled once.
	metadata []byte
	// metadataURL is where the metadata of the resource is.
	metadataURL string
	// challenge is the WWW-Authenticate value of a request without a
	// token; unauthorized adds error="invalid_token" to it.
	challenge string
}

// protectedResource is RFC 9728's document.
type protectedResource struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported"`
	BearerMethods        []string `json:"bearer_methods_supported"`
	ResourceName         string   `json:"resource_name,omitempty"`
}

func newResourceServer(v *auth.Verifier, public string) (*resourceServer, error) {
	public = strings.TrimRight(public, "/")
	doc, err := json.Marshal(protectedResource{
		Resource:             public + "/mcp",
		AuthorizationServers: []string{v.Issuer()},
		ScopesSupported:      auth.Scopes,
		BearerMethods:        []string{"header"},
		ResourceName:         "flowyprompt",
	})
	if err != nil {
		return nil, fmt.Errorf("protected resource metadata: %w", err)
	}
	mdURL := public + metadataMCP
	return &resourceServer{v: v, metadata: doc, metadataURL: mdURL,
		challenge: fmt.Sprintf(`Bearer resource_metadata=%q`, mdURL)}, nil
}

// serveMetadata answers the protected resource metadata.
func (rs *resourceServer) serveMetadata(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		httpx.MethodNotAllowed(w, r, http.MethodGet, http.MethodHead)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "max-age=3600")
	_, _ = w.Write(rs.metadata)
}

// admit checks the member's token on a request to /mcp, /sse or
// /sse/message. It answers the request itself and returns false when the
// token is missing, refused or lacks prompts:read; otherwise it returns r
// carrying the member (auth.WithMember) and the session owner it names
// (httpx.WithCaller). Nothing of the body has been read either way.
func (s *Server) admit(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	rs := s.oauth
	if r.URL.RawQuery != "" && r.URL.Query().Has("token") {
		// RFC 6750 allows the query for clients that cannot do better; the
		// MCP authorization specification does not, and a URL leaks into
		// logs and histories.
		s.unauthorized(w, r, true, "an access token in the URL (?token=)",
			"this server takes OAuth access tokens in the Authorization header only: a URL ends up in logs and histories",
			"send Authorization: Bearer TOKEN, and remove ?token= from the URL")
		return nil, false
	}
	a := r.Header.Get("Authorization")
	if a == "" {
		s.unauthorized(w, r, false, "no access token",
			"this server is an OAuth 2.1 resource server: every request to /mcp, /sse and /sse/message needs a member's access token",
			"sign in through the authorization server named by the resource_metadata URL in WWW-Authenticate, then send Authorization: Bearer TOKEN")
		return nil, false
	}
	if len(a) > auth.MaxTokenBytes+len("Bearer ") {
		s.unauthorized(w, r, true, fmt.Sprintf("an Authorization header of %d bytes", len(a)),
			fmt.Sprintf("access tokens longer than %d bytes are refused unread", auth.MaxTokenBytes),
			"send the access token the authorization server issued, as Authorization: Bearer TOKEN")
		return nil, false
	}
	token, ok := bearer(a)
	if !ok {
		s.unauthorized(w, r, true, "an Authorization header that is not a bearer token",
			"this server takes OAuth access tokens as Authorization: Bearer TOKEN",
			"send Authorization: Bearer TOKEN")
		return nil, false
	}
	m, err := rs.v.Verify(r.Context(), token)
	if errors.Is(err, auth.ErrNotReady) {
		w.Header().Set("Retry-After", "5")
		httpx.WriteError(w, r, http.StatusServiceUnavailable, &fault.Error{Code: mcp.CodeAuthUnavailable,
			What: "the access token cannot be checked yet",
			Why:  "the authorization server has not answered since this server started; it is being retried",
			How:  "try again in a few seconds; if it lasts, the operator should check --auth-issuer and the network"})
		return nil, false
	}
	if errors.Is(err, auth.ErrUnavailable) {
		// The introspection endpoint gave no answer: whether the token is
		// valid is not known. The Verifier logged why (at most every 30 s).
		w.Header().Set("Retry-After", "5")
		httpx.WriteError(w, r, http.StatusServiceUnavailable, &fault.Error{Code: mcp.CodeAuthUnavailable,
			What: "the access token cannot be checked now",
			Why:  "the authorization server's token introspection endpoint did not answer",
			How:  "try again in a few seconds; if it lasts, the operator should check --auth-introspection, the client credentials and the network"})
		return nil, false
	}
	if err != nil {
		// Why a token was refused is for the operator (at debug: a flood
		// of bad tokens must not flood the log); the client is told it
		// was refused, as RFC 6750 does.
		s.log.Debug("refused an access token", "path", r.URL.Path, "why", err)
		s.unauthorized(w, r, true, "the access token was refused",
			"it is not a valid token of this server's authorization server for this resource: expired, not yet valid, for another audience or issuer, or not signed by the issuer's keys",
			"get a new token from the authorization server named by the resource_metadata URL in WWW-Authenticate, with this server's URL as its resource")
		return nil, false
	}
	if !m.Has(auth.ScopeRead) {
		s.insufficientScope(w, r, auth.ScopeRead, "every request to /mcp, /sse and /sse/message reads prompts")
		return nil, false
	}
	r = r.WithContext(auth.WithMember(r.Context(), m))
	return httpx.WithCaller(r, httpx.Caller{Owner: ownerOf(m)}), true
}

// admitScope answers 403 with the step-up challenge a posted message
// whose member's token lacks the scope RequiredScope names for it.
func (s *Server) admitScope(w http.ResponseWriter, r *http.Request, in *mcp.Inbound) bool {
	scope := s.opts.RequiredScope(in)
	if scope == "" {
		return true
	}
	if m := auth.MemberOf(r.Context()); m != nil && m.Has(scope) {
		return true
	}
	s.insufficientScope(w, r, scope, in.Method()+" "+nameOf(in)+" needs it")
	return false
}

// nameOf is the tool, prompt or resource in names, quoted, or "".
func nameOf(in *mcp.Inbound) string {
	if name, ok := in.Name(); ok {
		return fmt.Sprintf("%.64q", name)
	}
	return ""
}

// insufficientScope answers 403 with the step-up challenge (RFC 6750
// section 3.1, the MCP authorization specification's scope challenge):
// the client may ask the authorization server for a token with scope and
// try again.
func (s *Server) insufficientScope(w http.ResponseWriter, r *http.Request, scope, why string) {
	w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope=%q, resource_metadata=%q`,
		scope, s.oauth.metadataURL))
	httpx.WriteError(w, r, http.StatusForbidden, &fault.Error{Code: mcp.CodeInsufficientScope,
		What: "the access token does not grant " + scope,
		Why:  why,
		How:  "ask the authorization server for a token with the scope " + scope})
}

// unauthorized answers 401 with the challenge that names the metadata;
// invalid adds error="invalid_token", for a request that gave a token.
func (s *Server) unauthorized(w http.ResponseWriter, r *http.Request, invalid bool, what, why, how string) {
	c := s.oauth.challenge
	if invalid {
		c += `, error="invalid_token"`
	}
	w.Header().Set("WWW-Authenticate", c)
	httpx.WriteError(w, r, http.StatusUnauthorized, &fault.Error{Code: mcp.CodeUnauthorized, What: what, Why: why, How: how})
}

// bearer returns the token of an Authorization header of the Bearer
// scheme (its name in any case, RFC 7235).
func bearer(a string) (string, bool) {
	scheme, token, ok := strings.Cut(a, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// ownerOf is the session owner m names: the digest of its issuer and
// subject (httpx.Owner's contract), the same for every token of the
// member.
func ownerOf(m *auth.Member) httpx.Owner {
	return sha256.Sum256([]byte("flowyprompt member\x00" + m.Issuer + "\x00" + m.Subject))
}

// memberKey is the client key of a member: their sessions are counted
// together whatever token they present.
func memberKey(m *auth.Member) string {
	return clientid.ForCredential("member\x00" + m.Issuer + "\x00" + m.Subject)
}

// member returns the member whose token, from r's Authorization header,
// is valid and grants prompts:read (for /healthz's details), else nil.
func (rs *resourceServer) member(r *http.Request, token string) *auth.Member {
	if token == "" || r.Header.Get("Authorization") == "" {
		return nil
	}
	m, err := rs.v.Verify(r.Context(), token)
	if err != nil || !m.Has(auth.ScopeRead) {
		return nil
	}
	return m
}

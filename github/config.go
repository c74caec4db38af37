package github

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/internal/hostguard"
	"github.com/flowyprompt/flowyprompt/templates"
)

// Defaults for the zero fields of Config.
const (
	DefaultAPIURL      = "https://api.github.com/"
	DefaultPath        = "templates"
	DefaultTTL         = 15 * time.Minute
	DefaultMaxFileSize = 102400
	// DefaultHTTPTimeout bounds one request when Config.HTTPClient is nil.
	DefaultHTTPTimeout = 30 * time.Second
)

// Config says which repository to read and how. Zero fields take the
// defaults named on each; negative durations and sizes are errors.
type Config struct {
	RepoURL string // GITHUB_REPO_URL: https://github.com/OWNER/REPO[.git], https://HOST/OWNER/REPO (Enterprise), or OWNER/REPO
	Token   string // GITHUB_PAT; optional for public repositories; never logged or stored
	// TokenVar names where Token came from, for messages ("check
	// TEAM_PAT: …"); default "GITHUB_PAT". A --source repository's is its
	// token-env= variable.
	TokenVar    string
	Ref         string        // GITHUB_REF: branch, tag or commit SHA; default the repository's default branch
	Path        string        // GITHUB_TEMPLATES_PATH: folder holding the templates; default "templates"
	APIURL      string        // GITHUB_API_URL: default https://api.github.com, or https://HOST/api/v3 for an Enterprise RepoURL
	TTL         time.Duration // CACHE_TTL_MS: how long a checked commit is trusted; default 15m
	MaxFileSize int           // MAX_FILE_SIZE: larger template files are refused unread; default 102400
	// VersionLookups is how many GitHub requests version lookups (older
	// versions, histories) may make a minute (GITHUB_VERSION_LOOKUPS);
	// default DefaultVersionLookups.
	VersionLookups int
	CacheDir       string       // default os.UserCacheDir()/flowyprompt; the cache file lives in CacheDir/github/
	HTTPClient     *http.Client // default: a client with a 30s timeout
	Logger         *slog.Logger // default slog.Default()
	Now            func() time.Time
	// Shared, when set, is the store through which the replicas of a
	// cluster share one catalog and one revalidation per TTL (see # Cluster
	// in the package documentation); nil: this process revalidates alone.
	Shared Shared
	// Replica names this replica in the shared state (who checked, who
	// claims); default: a random name.
	Replica string
	// Blobs, when set, is the pool of files this source shares with the
	// other sources of the repository (the refs of its labels); nil:
	// none.
	Blobs *BlobPool
}

// String describes c without its token, so printing a Config is safe.
func (c Config) String() string {
	tok := "none"
	if c.Token != "" {
		tok = "set"
	}
	return fmt.Sprintf("github.Config{RepoURL: %q, Token: %s, Ref: %q, Path: %q, APIURL: %q, TTL: %v, MaxFileSize: %d, CacheDir: %q}",
		redact(c.RepoURL), tok, c.Ref, c.Path, redact(c.APIURL), c.TTL, c.MaxFileSize, c.CacheDir)
}

// GoString keeps %#v from printing the token.
func (c Config) GoString() string { return c.String() }

// LogValue keeps slog from printing the token.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("repo_url", redact(c.RepoURL)), slog.Bool("token_set", c.Token != ""),
		slog.String("ref", c.Ref), slog.String("path", c.Path), slog.String("api_url", redact(c.APIURL)),
		slog.Duration("ttl", c.TTL), slog.Int("max_file_size", c.MaxFileSize))
}

// settings is a Config with defaults applied and the repository URL parsed.
type settings struct {
	host, owner, repo string
	webURL            string   // https://HOST/OWNER/REPO, never with credentials
	api               *url.URL // the API root, with a trailing slash
	apiURL            string   // api as text
	token             string
	tokenVar          string
	ref               string
	path              string // "" is the repository root
	ttl               time.Duration
	maxFileSize       int
	versionLookups    int
	cacheDir          string
	httpClient        *http.Client
	logger            *slog.Logger
	now               func() time.Time
	shared            Shared
	blobs             *BlobPool
	replica           string
}

var (
	ownerRE = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9_-]{0,38})$`)
	repoRE  = regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)
	hostRE  = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?(?::[0-9]{1,5})?$`)
	shaRE   = regexp.MustCompile(`^(?:[0-9a-fA-F]{40}|[0-9a-fA-F]{64})$`)
)

// knownTokenPrefixes are the prefixes GitHub gives its tokens: classic and
// fine-grained personal tokens, OAuth, user-to-server, server-to-server
// (Actions, apps) and refresh tokens.
var knownTokenPrefixes = []string{"ghp_", "github_pat_", "gho_", "ghu_", "ghs_", "ghr_"}

// IsCommitSHA reports whether ref is a full commit SHA, which names the same
// tree forever and so is never revalidated.
func IsCommitSHA(ref string) bool { return shaRE.MatchString(ref) }

func configError(what, why, how string) error {
	return fault.New(fault.InvalidArgument, what, why, how)
}

const repoURLHow = "set GITHUB_REPO_URL to https://github.com/OWNER/REPO (GitHub Enterprise: https://HOST/OWNER/REPO), or just OWNER/REPO"

// errCredentialsInURL refuses a URL carrying credentials: GITHUB_PAT is the
// one place a token goes, so that no URL printed anywhere can leak it.
func errCredentialsInURL(setting string) error {
	return configError(setting+" contains credentials",
		"a token inside the URL would end up in logs and error messages",
		"remove the credentials from the URL and put the token in GITHUB_PAT")
}

// Redact removes from s what must never be printed: credentials and query
// strings in URLs, and anything shaped like a GitHub token or an
// Authorization value. Use it to show a setting such as GITHUB_REPO_URL as
// the user gave it.
func Redact(s string) string { return redact(s) }

// parseRepoURL returns the host, owner and repository a GITHUB_REPO_URL
// names.
func parseRepoURL(s string) (host, owner, repo string, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", "", "", configError("GITHUB_REPO_URL is not set",
			"the github source needs the repository that holds the templates", repoURLHow)
	}
	host = "github.com"
	rest := s
	switch {
	case strings.HasPrefix(s, "git@"):
		// git@HOST:OWNER/REPO.git, as "Clone with SSH" shows it.
		h, p, ok := strings.Cut(strings.TrimPrefix(s, "git@"), ":")
		if !ok || h == "" {
			return "", "", "", badRepoURL(s, "an SSH address needs the form git@HOST:OWNER/REPO")
		}
		host, rest = h, p
	case strings.Contains(s, "://"):
		u, perr := url.Parse(s)
		if perr != nil {
			return "", "", "", badRepoURL(s, "it does not parse as a URL")
		}
		if u.User != nil {
			return "", "", "", errCredentialsInURL("GITHUB_REPO_URL")
		}
		if u.Scheme != "https" && u.Scheme != "http" {
			return "", "", "", badRepoURL(s, fmt.Sprintf("the %q scheme is not supported", u.Scheme))
		}
		if u.Host == "" {
			return "", "", "", badRepoURL(s, "it has no host")
		}
		if u.RawQuery != "" || u.Fragment != "" {
			return "", "", "", badRepoURL(s, "it has a query or fragment")
		}
		host, rest = u.Host, u.Path
	default:
		// OWNER/REPO, or HOST/OWNER/REPO without a scheme, where
		// USER:TOKEN@HOST/OWNER/REPO would otherwise be refused as a bad
		// host name, token included.
		if first, _, _ := strings.Cut(s, "/"); strings.Contains(first, "@") {
			return "", "", "", errCredentialsInURL("GITHUB_REPO_URL")
		}
		if parts := strings.Split(strings.Trim(s, "/"), "/"); len(parts) == 3 && strings.Contains(parts[0], ".") {
			host, rest = parts[0], parts[1]+"/"+parts[2]
		}
	}
	host = strings.ToLower(host)
	if host == "www.github.com" || host == "api.github.com" {
		host = "github.com"
	}
	if !hostRE.MatchString(host) {
		return "", "", "", badRepoURL(s, fmt.Sprintf("%q is not a host name", host))
	}
	parts := strings.Split(strings.Trim(rest, "/"), "/")
	if len(parts) != 2 {
		return "", "", "", badRepoURL(s, "it must name exactly an owner and a repository, with nothing after them (no /tree/BRANCH/FOLDER: use GITHUB_REF and GITHUB_TEMPLATES_PATH for those)")
	}
	owner, repo = parts[0], strings.TrimSuffix(parts[1], ".git")
	if !ownerRE.MatchString(owner) {
		return "", "", "", badRepoURL(s, fmt.Sprintf("%q is not a valid GitHub owner name", owner))
	}
	if !repoRE.MatchString(repo) || repo == "." || repo == ".." {
		return "", "", "", badRepoURL(s, fmt.Sprintf("%q is not a valid repository name", repo))
	}
	return host, owner, repo, nil
}

func badRepoURL(s, why string) error {
	return configError(fmt.Sprintf("GITHUB_REPO_URL %q is not a repository address", redact(s)), why, repoURLHow)
}

// Validate reports every problem in c, each a *fault.Error with what, why and
// how (joined when there are several).
func (c Config) Validate() error {
	_, err := c.resolve()
	return err
}

// Warnings returns problems worth telling the user that do not stop the
// server, such as a token with a prefix GitHub does not use.
func (c Config) Warnings() []string {
	var w []string
	if t := c.Token; t != "" && !hasKnownPrefix(t) {
		w = append(w, "GITHUB_PAT does not start with a known GitHub token prefix ("+
			strings.Join(knownTokenPrefixes, ", ")+"); using it anyway")
	}
	if c.TTL > 0 && c.TTL < 10*time.Second {
		w = append(w, fmt.Sprintf("CACHE_TTL_MS is %v: revalidating this often spends GitHub's rate limit for little gain", c.TTL))
	}
	return w
}

func hasKnownPrefix(token string) bool {
	for _, p := range knownTokenPrefixes {
		if strings.HasPrefix(token, p) {
			return true
		}
	}
	return false
}

func (c Config) resolve() (settings, error) {
	s := settings{
		token:          c.Token,
		tokenVar:       c.TokenVar,
		ref:            strings.TrimSpace(c.Ref),
		ttl:            c.TTL,
		maxFileSize:    c.MaxFileSize,
		versionLookups: c.VersionLookups,
		cacheDir:       c.CacheDir,
		httpClient:     c.HTTPClient,
		logger:         c.Logger,
		now:            c.Now,
		shared:         c.Shared,
		replica:        c.Replica,
		blobs:          c.Blobs,
	}
	var errs []error
	host, owner, repo, err := parseRepoURL(c.RepoURL)
	if err != nil {
		errs = append(errs, err)
	}
	s.host, s.owner, s.repo = host, owner, repo
	s.webURL = "https://" + host + "/" + owner + "/" + repo

	switch {
	case c.APIURL != "":
		api, err := parseAPIURL(c.APIURL)
		if err != nil {
			errs = append(errs, err)
		}
		s.api = api
	case host == "github.com" || host == "":
		s.api = &url.URL{Scheme: "https", Host: "api.github.com", Path: "/"} // DefaultAPIURL
	default:
		// GitHub Enterprise Server serves its API under /api/v3/ on the
		// same host; deriving it saves users a setting they often get wrong.
		s.api = &url.URL{Scheme: "https", Host: host, Path: "/api/v3/"}
	}
	if s.api != nil {
		s.apiURL = s.api.String()
	}

	if s.tokenVar == "" {
		s.tokenVar = "GITHUB_PAT"
	}
	if strings.ContainsFunc(c.Token, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		errs = append(errs, configError("GITHUB_PAT contains whitespace or control characters",
			"GitHub tokens never do, so the value was probably pasted with a line break or quotes",
			"copy the token again and set GITHUB_PAT to exactly the token"))
	}

	if s.ref != "" && !validRef(s.ref) {
		errs = append(errs, configError(fmt.Sprintf("GITHUB_REF %q is not a valid branch, tag or commit name", s.ref),
			"git refs cannot contain spaces, '..', '~', '^', ':', '?', '*', '[' or '\\', or start with '-' or '/'",
			"set GITHUB_REF to a branch (main), a tag (v1.2.0) or a full commit SHA, or unset it to use the default branch"))
	}

	p := c.Path
	if p == "" {
		p = DefaultPath
	}
	p = strings.Trim(p, "/")
	if p == "." {
		p = ""
	}
	// A hidden folder (.github/prompts) is a folder like any other; what
	// is hidden inside the folder is what is never served.
	if clean, err := templates.RelPath(p); p != "" && (clean != p || (err != nil && !errors.Is(err, templates.ErrPathHidden))) {
		errs = append(errs, configError(fmt.Sprintf("GITHUB_TEMPLATES_PATH %q is not a folder inside the repository", c.Path),
			"it must be a plain relative path without '.' or '..' segments",
			"set GITHUB_TEMPLATES_PATH to a folder such as templates or prompts/team (\".\" for the repository root)"))
	}
	s.path = p

	switch {
	case s.ttl == 0:
		s.ttl = DefaultTTL
	case s.ttl < 0:
		errs = append(errs, configError(fmt.Sprintf("CACHE_TTL_MS is %d", c.TTL.Milliseconds()),
			"the cache lifetime must be positive",
			"set CACHE_TTL_MS to a positive number of milliseconds (900000 is 15 minutes), or unset it"))
	}
	switch {
	case s.maxFileSize == 0:
		s.maxFileSize = DefaultMaxFileSize
	case s.maxFileSize < 0:
		errs = append(errs, configError(fmt.Sprintf("MAX_FILE_SIZE is %d", c.MaxFileSize),
			"the template size limit must be positive",
			"set MAX_FILE_SIZE to a positive number of bytes (102400 is 100 KB), or unset it"))
	}
	switch {
	case s.versionLookups == 0:
		s.versionLookups = DefaultVersionLookups
	case s.versionLookups < 0:
		errs = append(errs, configError(fmt.Sprintf("GITHUB_VERSION_LOOKUPS is %d", c.VersionLookups),
			"the budget of version lookups must be positive",
			fmt.Sprintf("set GITHUB_VERSION_LOOKUPS to a positive number of GitHub requests a minute (default %d), or unset it", DefaultVersionLookups)))
	}
	if s.httpClient == nil {
		s.httpClient = &http.Client{Timeout: DefaultHTTPTimeout}
	}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if len(errs) == 1 {
		return s, errs[0]
	}
	return s, errors.Join(errs...)
}

func parseAPIURL(raw string) (*url.URL, error) {
	how := "set GITHUB_API_URL to https://api.github.com, or https://HOST/api/v3 for GitHub Enterprise Server"
	u, err := url.Parse(strings.TrimSpace(raw))
	switch {
	case err != nil:
		return nil, configError(fmt.Sprintf("GITHUB_API_URL %q is not a URL", redact(raw)), "it does not parse", how)
	case u.User != nil:
		return nil, errCredentialsInURL("GITHUB_API_URL")
	case u.Scheme != "https" && u.Scheme != "http", u.Host == "":
		return nil, configError(fmt.Sprintf("GITHUB_API_URL %q is not an absolute http(s) URL", redact(raw)), "it needs a scheme and a host", how)
	case u.RawQuery != "" || u.Fragment != "":
		return nil, configError(fmt.Sprintf("GITHUB_API_URL %q has a query or fragment", redact(raw)), "requests are built by appending paths to it", how)
	case u.Scheme == "http" && !hostguard.Loopback(u.Hostname()):
		// The token rides on every request: in clear text, anyone on the
		// way could read it. A server on this machine (a test fake, a
		// local proxy) sends nothing over the network.
		return nil, configError(fmt.Sprintf("GITHUB_API_URL %q uses plain http", redact(raw)),
			"the token would cross the network unencrypted; plain http is allowed only for a server on this machine (localhost, 127.0.0.1, ::1)",
			"use an https:// URL: "+how)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	return u, nil
}

// ValidRef reports whether ref may name a branch, tag or commit: the
// rules the source checks its own ref by, for settings read elsewhere
// (the refs of labels).
func ValidRef(ref string) bool { return validRef(ref) }

// validRef applies the git check-ref-format rules that matter for a ref a
// user types.
func validRef(ref string) bool {
	if strings.HasPrefix(ref, "-") || strings.HasPrefix(ref, "/") || strings.HasSuffix(ref, "/") ||
		strings.HasSuffix(ref, ".") || strings.HasSuffix(ref, ".lock") ||
		strings.Contains(ref, "..") || strings.Contains(ref, "//") || strings.Contains(ref, "@{") {
		return false
	}
	return !strings.ContainsFunc(ref, func(r rune) bool {
		return r <= ' ' || r == 0x7f || strings.ContainsRune("~^:?*[\\", r)
	})
}

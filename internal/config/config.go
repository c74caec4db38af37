// Package config reads flowyprompt's settings from flags and the
// environment (flags win), and explains bad values before anything starts.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/flowyprompt/flowyprompt/github"
	"github.com/flowyprompt/flowyprompt/mcp"

	"github.com/flowyprompt/flowyprompt/internal/seal"
	"github.com/flowyprompt/flowyprompt/internal/suggest"
)

// Config is every setting of the server.
type Config struct {
	Transport      string
	Addr           string
	TemplatesDir   string
	MaxFileSize    int
	MaxMessageSize int
	RequestTimeout time.Duration
	LogLevel       string
	LogFormat      string
	AllowWrite     bool
	WritePatterns  string

	GitHubRepoURL string
	GitHubToken   string
	// GitHubTokenVar names the variable GitHubToken came from, for
	// messages; "" is GITHUB_PAT. Set for each --source repository to its
	// token-env=.
	GitHubTokenVar string
	GitHubRef      string
	// GitHubLabels are the single GitHub source's labels
	// (--github-labels), the default first; read by Check from
	// githubLabels, and GitHubRef is then the default's ref.
	GitHubLabels []Label
	githubLabels string
	GitHubPath   string
	GitHubAPIURL string
	CacheTTL     time.Duration
	CacheDir     string
	// VersionLookups is how many GitHub requests each GitHub source's
	// version lookups may make a minute.
	VersionLookups int

	// Sources are the --source values (or FLOWYPROMPT_SOURCES), read by
	// Check: several libraries served at once, each under its namespace.
	// Empty means the single source of the settings above.
	Sources     []SourceSpec
	sourceFlags []string
	env         Env

	// Label is the label served to a client that names none (--label,
	// FLOWYPROMPT_LABEL; "": the default label).
	Label string
	// Blobs is no setting: it is the pool the GitHub sources of one run
	// share their files through when labels serve several refs (nil:
	// none), set by the command before the sources open.
	Blobs *github.BlobPool

	// HTTP transport (serve --transport http).
	PublicURL      string
	AllowedHosts   []string
	AllowedOrigins []string
	AuthToken      string
	// AuthIssuer, when set, makes the HTTP server an OAuth 2.1 resource
	// server for this authorization server's members; AuthAudience
	// overrides the aud its tokens must carry (default PublicURL/mcp).
	AuthIssuer   string
	AuthAudience string
	// AuthIntrospection is the RFC 7662 introspection endpoint opaque
	// tokens are checked at, with AuthClientID and AuthClientSecret (read
	// from the environment only: a command line is visible to every user
	// of the machine).
	AuthIntrospection string
	AuthClientID      string
	AuthClientSecret  Secret
	// AuthPolicy is the access policy file: which sources each member
	// reads and writes (needs AuthIssuer).
	AuthPolicy string
	// StateKeys seal the state the server hands to clients (the
	// requestState of input-required results): comma-separated Base64 keys,
	// the first signing, all verifying. Replicas share them. Secret.
	StateKeys   string
	KeepAlive   time.Duration
	IdleTimeout time.Duration
	MaxSessions int
	// MaxSubscriptions caps the resources one session, or one
	// subscriptions/listen stream, may subscribe to.
	MaxSubscriptions int
	// MaxSessionsPerClient caps the sessions and listen streams of one
	// client (its token, else its address).
	MaxSessionsPerClient int
	// MaxInflightBytes bounds the bytes of posted messages the HTTP
	// transports hold at once, until their requests have run (0: none).
	MaxInflightBytes int64
	// TrustedProxies are the reverse proxies (addresses, CIDR ranges)
	// whose X-Forwarded-For names the client.
	TrustedProxies []string
	// MetricsAddr is the HOST:PORT of the Prometheus /metrics listener
	// ("": none).
	MetricsAddr string
	// UI serves the preview page, read-only, at /ui/ of the HTTP
	// listener (serve --ui).
	UI bool

	// Cluster (serve --nats): the NATS server the replicas share, its
	// credential and TLS files, and this replica's id. NATSURL may hold a
	// password: it is never logged.
	NATSURL                              string
	NATSCreds, NATSCA, NATSCert, NATSKey string
	Replica                              string

	// MaxForwarded bounds the requests other replicas forward to this
	// one at once; MaxForwardedPerSession and MaxForwardedPerClient one
	// session's and one client's share of them.
	MaxForwarded, MaxForwardedPerSession, MaxForwardedPerClient int

	// CPUProfile, when set, is where serve writes a CPU profile of its
	// whole run (for performance reports).
	CPUProfile string
	// Procs is how many CPUs serve runs Go code on at once (GOMAXPROCS);
	// 0 picks half the machine's, at least one, over stdio, and every CPU
	// over HTTP.
	Procs int

	// placeholders names the variables read as unset because they held a
	// host's unreplaced ${user_config.…}. The environment is read before
	// the log level is known, so Logger reports them.
	placeholders []string
}

// Env is the environment lookup (os.LookupEnv in production).
type Env func(string) (string, bool)

// Register adds the flags of the commands that load templates and may
// save them (serve, call, check): RegisterSource and RegisterWrite.
func Register(fs *flag.FlagSet, c *Config, env Env) error {
	return errors.Join(RegisterSource(fs, c, env), RegisterWrite(fs, c, env))
}

// RegisterFileSize adds --max-file-size alone: validate reads files it is
// given, so where templates come from and logging mean nothing to it.
func RegisterFileSize(fs *flag.FlagSet, c *Config, env Env) error {
	r := &envReader{env: env}
	fs.IntVar(&c.MaxFileSize, "max-file-size", r.positiveInt("MAX_FILE_SIZE", 102400), "largest template file in `bytes` (env MAX_FILE_SIZE)")
	return r.err()
}

// RegisterSource adds the flags of the commands that read templates
// (list, render): where they come from (a folder, or GitHub with its disk
// cache), the file size limit and logging, with defaults taken from the
// environment.
func RegisterSource(fs *flag.FlagSet, c *Config, env Env) error {
	sizeErr := RegisterFileSize(fs, c, env)
	r := &envReader{env: env}
	fs.StringVar(&c.TemplatesDir, "templates", r.setting("TEMPLATES_DIR"), "serve the template `folder` DIR, watched for changes (env TEMPLATES_DIR); default: the built-in examples")
	fs.StringVar(&c.LogLevel, "log-level", r.strOr("LOG_LEVEL", "info"), "log `level` on stderr: debug, info, warn, error (env LOG_LEVEL)")
	fs.StringVar(&c.LogFormat, "log-format", r.strOr("LOG_FORMAT", "text"), "log `format` on stderr: text or json (env LOG_FORMAT)")
	fs.StringVar(&c.GitHubRepoURL, "github-repo", r.setting("GITHUB_REPO_URL"), "serve templates from this GitHub repository `URL`, e.g. https://github.com/acme/prompts (env GITHUB_REPO_URL)")
	c.GitHubToken = r.setting("GITHUB_PAT") // never a flag: command lines are visible to every user of the machine
	c.env = env
	fs.Func("source", "serve this `SPEC` too, repeated for several libraries at once, each under its namespace: "+
		"name=NS,github=URL[,ref=REF][,path=DIR][,api-url=URL][,token-env=VAR] or name=NS,dir=PATH or name=NS,examples; "+
		"the order is the precedence of bare names (env FLOWYPROMPT_SOURCES, SPECs separated by ';'; tokens only through token-env=VAR; see docs/configuration.md)",
		func(v string) error {
			c.sourceFlags = append(c.sourceFlags, v)
			return nil
		})
	fs.StringVar(&c.GitHubRef, "github-ref", r.setting("GITHUB_REF"), "branch, tag or commit `ref` (env GITHUB_REF; default: the repository's default branch)")
	fs.StringVar(&c.githubLabels, "github-labels", r.setting("GITHUB_LABELS"), "serve these refs of the repository by label, `NAME:REF` pairs joined by '+', the default first, e.g. production:main+staging:staging (env GITHUB_LABELS; see docs/review.md)")
	fs.StringVar(&c.GitHubPath, "github-path", r.strOr("GITHUB_TEMPLATES_PATH", "templates"), "`folder` of templates in the repository (env GITHUB_TEMPLATES_PATH)")
	fs.StringVar(&c.GitHubAPIURL, "github-api-url", r.str("GITHUB_API_URL"), "GitHub API base `URL` (env GITHUB_API_URL; default https://api.github.com, or https://HOST/api/v3 for a repository on a GitHub Enterprise HOST)")
	fs.DurationVar(&c.CacheTTL, "cache-ttl", r.millis("CACHE_TTL_MS", 15*time.Minute), "how long GitHub content is fresh before revalidation (env CACHE_TTL_MS in milliseconds)")
	fs.IntVar(&c.VersionLookups, "github-version-lookups", r.positiveInt("GITHUB_VERSION_LOOKUPS", github.DefaultVersionLookups),
		"GitHub `requests` a minute that each GitHub source may spend on older versions and histories; past it they answer RATE_LIMITED (env GITHUB_VERSION_LOOKUPS)")
	fs.StringVar(&c.CacheDir, "cache-dir", r.str("FLOWYPROMPT_CACHE_DIR"), "disk cache `folder` (env FLOWYPROMPT_CACHE_DIR; default: the user cache directory)")
	// -h prints each flag's default, here taken from the environment: a
	// URL given with a token in it (refused when the source starts) must
	// not be shown with it.
	for _, name := range []string{"github-repo", "github-api-url"} {
		f := fs.Lookup(name)
		f.DefValue = github.Redact(f.DefValue)
	}
	c.placeholders = append(c.placeholders, r.placeholders...)
	return errors.Join(sizeErr, r.err())
}

// RegisterWrite adds the save tool's flags, for the commands that can run
// it (serve, call).
func RegisterWrite(fs *flag.FlagSet, c *Config, env Env) error {
	r := &envReader{env: env}
	fs.BoolVar(&c.AllowWrite, "allow-write", r.boolean("WRITE_ENABLED"), "enable flowyprompt_save_template (env WRITE_ENABLED=true)")
	fs.StringVar(&c.WritePatterns, "write-allow", r.strOr("WRITE_ALLOW", "*"), "comma-separated name `patterns` the save tool may write, e.g. 'team_*,draft_*' (env WRITE_ALLOW)")
	return r.err()
}

// RegisterState adds the flag that sets the keys sealing the state handed
// to clients: RegisterServe's, and alone for a command that runs tools but
// serves no one (flowyprompt call continues a flow another call, or a
// server with the same keys, started).
func RegisterState(fs *flag.FlagSet, c *Config, env Env) {
	// A key is a secret: its default comes from the environment and is
	// never printed as a flag default.
	c.StateKeys, _ = env("FLOWYPROMPT_STATE_KEYS")
	fs.Func("state-keys", "Base64 `keys`, comma-separated, that sign the state handed to clients (input-required answers, flow handles); replicas behind one load balancer need the same (env FLOWYPROMPT_STATE_KEYS, preferred; default: a random key per process)", func(v string) error {
		c.StateKeys = v
		return nil
	})
}

// envReader reads flag defaults from the environment and collects every
// bad value, so one run reports them all instead of the first.
type envReader struct {
	env          Env
	errs         []error
	placeholders []string
}

func (r *envReader) err() error { return errors.Join(r.errs...) }

func (r *envReader) str(name string) string { v, _ := r.env(name); return v }

// setting reads a variable an installer may fill from a settings form.
// Claude Desktop passes a bundle's env entry "${user_config.x}" through
// unchanged when the user left x empty and it has no default, so such a
// value means "not set", as an empty one does: the built-in examples are
// then served instead of a folder named "${user_config.templates_dir}".
func (r *envReader) setting(name string) string {
	v := r.str(name)
	if Unreplaced(v) {
		r.placeholders = append(r.placeholders, name)
		return ""
	}
	return v
}

// Unreplaced reports whether v is a whole ${user_config.…} placeholder
// that the host left in place.
func Unreplaced(v string) bool {
	return strings.HasPrefix(v, "${user_config.") && strings.HasSuffix(v, "}") && strings.Count(v, "}") == 1
}

// strOr treats an empty variable as unset, as a shell's FOO= means.
func (r *envReader) strOr(name, def string) string {
	if v := r.str(name); v != "" {
		return v
	}
	return def
}

func (r *envReader) positiveInt(name string, def int) int {
	v, ok := r.env(name)
	if !ok || v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		r.errs = append(r.errs, fmt.Errorf("%s=%q is not a positive integer: set it to one, e.g. %d (the default), or unset it", name, v, def))
		return def
	}
	return n
}

// millis reads a duration in milliseconds, the unit the seed's variables
// (CACHE_TTL_MS) use.
func (r *envReader) millis(name string, def time.Duration) time.Duration {
	v, ok := r.env(name)
	if !ok || v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		r.errs = append(r.errs, fmt.Errorf("%s=%q is not a positive number of milliseconds: e.g. %d for %s, or unset it", name, v, def.Milliseconds(), def))
		return def
	}
	return time.Duration(n) * time.Millisecond
}

func (r *envReader) boolean(name string) bool {
	v := r.str(name)
	b, err := strconv.ParseBool(v)
	if v != "" && err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s=%q is not true or false", name, v))
	}
	return b
}

// RegisterServe adds the serve command's own flags.
func RegisterServe(fs *flag.FlagSet, c *Config, env Env) error {
	var errs []error
	str := func(name string) string { v, _ := env(name); return v }
	fs.StringVar(&c.Transport, "transport", "stdio", "`transport`: stdio or http (Void: /sse, MCP Inspector: /mcp)")
	fs.StringVar(&c.Addr, "addr", "127.0.0.1:3000", "listen `address` for the HTTP transport; other than loopback, see docs/http.md")
	fs.StringVar(&c.Label, "label", str("FLOWYPROMPT_LABEL"), "serve this `label` to clients that name none, e.g. staging: one of the labels of --source's labels= or --github-labels (env FLOWYPROMPT_LABEL; default: the first label)")
	fs.StringVar(&c.PublicURL, "public-url", "", "base `URL` clients reach the HTTP server at, behind a reverse proxy, e.g. https://prompts.example.com")
	list := func(dst *[]string) func(string) error {
		return func(v string) error {
			for _, p := range strings.Split(v, ",") {
				if p = strings.TrimSpace(p); p != "" {
					*dst = append(*dst, p)
				}
			}
			return nil
		}
	}
	fs.Func("allowed-hosts", "extra Host `names` the HTTP server answers, comma-separated, name or name:port ('*': any); loopback names are always allowed", list(&c.AllowedHosts))
	fs.Func("allowed-origins", "extra browser `origins` allowed, comma-separated scheme://host[:port] ('*': any); loopback origins are always allowed", list(&c.AllowedOrigins))
	// The token's default comes from the environment but is never printed
	// as a flag default (serve -h would show it), and a command line is
	// visible to every user of the machine: prefer MCP_AUTH_TOKEN.
	c.AuthToken = str("MCP_AUTH_TOKEN")
	fs.Func("auth-token", "require this bearer `token` on every request to /mcp, /sse and /sse/message (env MCP_AUTH_TOKEN, preferred: command lines are visible to other users)", func(v string) error {
		c.AuthToken = v
		return nil
	})
	fs.StringVar(&c.AuthIssuer, "auth-issuer", str("FLOWYPROMPT_AUTH_ISSUER"), "the OAuth authorization server's issuer `URL`: members sign in there and send its access tokens to /mcp, /sse and /sse/message; needs --public-url (env FLOWYPROMPT_AUTH_ISSUER; see docs/auth.md)")
	fs.StringVar(&c.AuthAudience, "auth-audience", str("FLOWYPROMPT_AUTH_AUDIENCE"), "with --auth-issuer, the `aud` access tokens must carry when the authorization server cannot put the resource (PUBLIC_URL/mcp) there, e.g. Auth0's API audience (env FLOWYPROMPT_AUTH_AUDIENCE)")
	fs.StringVar(&c.AuthIntrospection, "auth-introspection", str("FLOWYPROMPT_AUTH_INTROSPECTION"), "with --auth-issuer, the issuer's token introspection `URL` (RFC 7662): tokens that are not JWTs the issuer's keys verify are checked there, as the client FLOWYPROMPT_AUTH_CLIENT_ID with FLOWYPROMPT_AUTH_CLIENT_SECRET (env FLOWYPROMPT_AUTH_INTROSPECTION; see docs/auth.md)")
	// The client credentials come from the environment only, never from a
	// flag: a command line is visible to every user of the machine.
	c.AuthClientID = str("FLOWYPROMPT_AUTH_CLIENT_ID")
	c.AuthClientSecret = Secret(str("FLOWYPROMPT_AUTH_CLIENT_SECRET"))
	fs.StringVar(&c.AuthPolicy, "auth-policy", str("FLOWYPROMPT_AUTH_POLICY"), "with --auth-issuer, the access policy `file` (JSON): which sources each member reads and writes, by a claim of their token; reloaded when it changes and on SIGHUP (env FLOWYPROMPT_AUTH_POLICY; see docs/auth.md)")
	RegisterState(fs, c, env)
	// Like the auth token, a NATS URL may carry a password: its default
	// comes from the environment and is never printed as a flag default.
	c.NATSURL = str("NATS_URL")
	fs.Func("nats", "join the other replicas through the NATS server at this `URL` (env NATS_URL, preferred when the URL holds a password; credentials and TLS files: NATS_CREDS, NATS_CA, NATS_CERT, NATS_KEY; see docs/scale-out.md)", func(v string) error {
		c.NATSURL = v
		return nil
	})
	c.NATSCreds, c.NATSCA, c.NATSCert, c.NATSKey = str("NATS_CREDS"), str("NATS_CA"), str("NATS_CERT"), str("NATS_KEY")
	fs.IntVar(&c.MaxForwarded, "max-forwarded", 1024, "with --nats, most `requests` other replicas forward to this one at once; more are refused with 503")
	fs.IntVar(&c.MaxForwardedPerSession, "max-forwarded-per-session", 64, "with --nats, most forwarded `requests` of one session at once (an open event stream counts while open)")
	fs.IntVar(&c.MaxForwardedPerClient, "max-forwarded-per-client", 256, "with --nats, most forwarded `requests` of one client (its token, else its address, as --max-sessions-per-client counts it) at once")
	fs.StringVar(&c.Replica, "replica-id", str("FLOWYPROMPT_REPLICA_ID"), "this replica's `id` in the cluster: letters, digits, '-' and '_' (env FLOWYPROMPT_REPLICA_ID; default: the host name and a random suffix)")
	fs.DurationVar(&c.KeepAlive, "keepalive", 15*time.Second, "`interval` of keep-alive comments on HTTP event streams (0: none)")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", 30*time.Minute, "close HTTP sessions unused for this `duration` (an open event stream keeps a session alive; 0: never)")
	fs.IntVar(&c.MaxSessions, "max-sessions", 10000, "most live HTTP `sessions` and subscriptions/listen streams; at the cap idle sessions are ended to make room, then 503 (0: no cap)")
	fs.IntVar(&c.MaxSessionsPerClient, "max-sessions-per-client", 1000, "most HTTP sessions and listen streams one client (its token, else its address) holds; more are refused with 429 (0: no cap)")
	fs.Int64Var(&c.MaxInflightBytes, "max-inflight-bytes", 256<<20, "most `bytes` of posted messages held at once until their requests have run, a quarter of it per client and a sixteenth per session; more wait up to 1 s, then are refused with 503 or 429 (0: no bound)")
	list(&c.TrustedProxies)(str("MCP_TRUSTED_PROXIES"))
	fs.Func("trusted-proxies", "reverse proxies whose X-Forwarded-For names the client, comma-separated `addresses or CIDR ranges` (env MCP_TRUSTED_PROXIES; default: none, the header is ignored)", func(v string) error {
		c.TrustedProxies = nil
		return list(&c.TrustedProxies)(v)
	})
	c.MaxSubscriptions = mcp.DefaultMaxSubscriptions
	fs.Func("max-subscriptions", fmt.Sprintf("most `resources` one session or subscriptions/listen stream may subscribe to; more are refused (default %d)", mcp.DefaultMaxSubscriptions), func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("%q is not a positive number of subscriptions: use e.g. %d, the default", v, mcp.DefaultMaxSubscriptions)
		}
		c.MaxSubscriptions = n
		return nil
	})
	size := 4 << 20
	if v := str("MCP_MAX_MESSAGE_SIZE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("MCP_MAX_MESSAGE_SIZE=%q is not a positive number of bytes", v))
		} else {
			size = n
		}
	}
	fs.IntVar(&c.MaxMessageSize, "max-message-size", size, "largest inbound JSON-RPC message in `bytes` (env MCP_MAX_MESSAGE_SIZE)")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", 5*time.Minute, "deadline for one request")
	fs.IntVar(&c.Procs, "procs", 0, "CPUs to run on at once (0: over stdio half the machine's, at least 1; over HTTP all of them; the GOMAXPROCS variable, when set, wins)")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", str("FLOWYPROMPT_METRICS_ADDR"), "serve Prometheus metrics at http://`HOST:PORT`/metrics, a listener of its own (an empty host is loopback; env FLOWYPROMPT_METRICS_ADDR; default: none; see docs/observability.md)")
	if v := str("FLOWYPROMPT_UI"); v != "" {
		ui, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("FLOWYPROMPT_UI=%q is not true or false", v))
		}
		c.UI = ui
	}
	fs.BoolVar(&c.UI, "ui", c.UI, "with --transport http, serve the preview page (templates, problems, a form, the rendered prompt) read-only at /ui/, behind the same Host and Origin checks and access token as /mcp (env FLOWYPROMPT_UI; see docs/review.md)")
	fs.StringVar(&c.CPUProfile, "cpuprofile", "", "write a CPU profile of the whole run to this `file`, for `go tool pprof` (performance reports)")
	return errors.Join(errs...)
}

// Check validates values that flags alone cannot, and reads the --source
// specs (Sources), which need the flags parsed first.
func (c *Config) Check() error {
	var errs []error
	if c.MaxFileSize <= 0 {
		errs = append(errs, fmt.Errorf("--max-file-size must be positive (got %d): use e.g. 102400", c.MaxFileSize))
	}
	if c.VersionLookups < 0 {
		errs = append(errs, fmt.Errorf("--github-version-lookups must be positive (got %d): use e.g. %d, the default", c.VersionLookups, github.DefaultVersionLookups))
	}
	if _, err := ParseLevel(c.LogLevel); err != nil {
		// Named both ways: the value may come from either.
		errs = append(errs, fmt.Errorf("--log-level / LOG_LEVEL: %w", err))
	}
	if c.Procs < 0 {
		errs = append(errs, fmt.Errorf("--procs must be 0 (the default for the transport) or more (got %d)", c.Procs))
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		errs = append(errs, fmt.Errorf("--log-format / LOG_FORMAT %q is not text or json", c.LogFormat))
	}
	if c.env != nil {
		sources, err := parseSources(c.sourceFlags, c.env)
		c.Sources = sources
		if err != nil {
			errs = append(errs, err)
		}
		errs = append(errs, c.expandHomes()...)
	}
	errs = append(errs, c.checkLabels()...)
	if len(c.Sources) > 0 && (c.TemplatesDir != "" || c.GitHubRepoURL != "") {
		var names []string
		for _, s := range c.Sources {
			names = append(names, s.describe())
		}
		errs = append(errs, fmt.Errorf("--source (%s) and a single source (TEMPLATES_DIR / --templates or GITHUB_REPO_URL / --github-repo) are both set: "+
			"add the single one as one more --source, e.g. name=main,dir=PATH, and unset it", strings.Join(names, ", ")))
	}
	if c.TemplatesDir != "" && c.GitHubRepoURL != "" {
		errs = append(errs, fmt.Errorf("both a template folder (%s) and a GitHub repository (%s) are set: unset TEMPLATES_DIR / --templates or GITHUB_REPO_URL / --github-repo", c.TemplatesDir, github.Redact(c.GitHubRepoURL)))
	}
	if c.Transport != "" && c.Transport != "stdio" && c.Transport != "http" {
		errs = append(errs, badTransport(c.Transport))
	}
	if c.Transport == "http" {
		if err := checkAddr(c.Addr); err != nil {
			errs = append(errs, err)
		}
		if c.AuthIssuer != "" && c.AuthToken != "" {
			errs = append(errs, errors.New("--auth-issuer (FLOWYPROMPT_AUTH_ISSUER) and --auth-token (MCP_AUTH_TOKEN) are both set: with an authorization server, members sign in with its tokens; unset one of them"))
		}
		if c.AuthIssuer != "" && c.PublicURL == "" {
			errs = append(errs, errors.New("--auth-issuer needs --public-url: the resource the authorization server issues tokens for is PUBLIC_URL/mcp, e.g. --public-url https://prompts.example.com"))
		}
	}
	if c.AuthPolicy != "" && c.AuthIssuer == "" {
		errs = append(errs, errors.New("--auth-policy (FLOWYPROMPT_AUTH_POLICY) is set without --auth-issuer: the policy matches claims of the members' access tokens, which only an authorization server issues; set --auth-issuer and --public-url too, or unset it"))
	}
	if c.UI && c.Transport != "http" {
		errs = append(errs, errors.New("--ui (FLOWYPROMPT_UI) serves the preview page over HTTP: add --transport http, or run flowyprompt preview for a page of your own on this machine"))
	}
	if c.AuthAudience != "" && c.AuthIssuer == "" {
		errs = append(errs, errors.New("--auth-audience is set without --auth-issuer: it says which aud the issuer's tokens carry; set --auth-issuer too, or unset it"))
	}
	if c.AuthIntrospection != "" {
		if c.AuthIssuer == "" {
			errs = append(errs, errors.New("--auth-introspection (FLOWYPROMPT_AUTH_INTROSPECTION) is set without --auth-issuer: it checks the issuer's opaque tokens; set --auth-issuer too, or unset it"))
		}
		if c.AuthClientID == "" || c.AuthClientSecret == "" {
			errs = append(errs, errors.New("--auth-introspection needs this server's client credentials at the authorization server: set FLOWYPROMPT_AUTH_CLIENT_ID and FLOWYPROMPT_AUTH_CLIENT_SECRET in the environment (see docs/auth.md#opaque-tokens)"))
		}
	}
	if c.CacheTTL <= 0 {
		errs = append(errs, fmt.Errorf("--cache-ttl must be positive (got %s): give a duration, e.g. --cache-ttl 15m", c.CacheTTL))
	}
	if c.StateKeys != "" {
		if _, err := seal.ParseKeys(c.StateKeys); err != nil {
			errs = append(errs, fmt.Errorf("--state-keys / FLOWYPROMPT_STATE_KEYS: %w", err))
		}
	}
	return errors.Join(errs...)
}

// expandHomes expands a leading ~ in the settings that name a folder, as
// a shell would have: a value written in quotes (TEMPLATES_DIR='~/prompts'),
// in a settings form or in a client's configuration file reaches the
// server unexpanded, and a folder named "~" in the working directory is
// never what was meant.
func (c *Config) expandHomes() []error {
	var errs []error
	expand := func(p *string, setting string) {
		v, err := expandHome(*p, c.env)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", setting, err))
			return
		}
		*p = v
	}
	expand(&c.TemplatesDir, "--templates / TEMPLATES_DIR")
	expand(&c.CacheDir, "--cache-dir / FLOWYPROMPT_CACHE_DIR")
	for i := range c.Sources {
		if c.Sources[i].Kind == KindDir {
			expand(&c.Sources[i].Location, "--source "+c.Sources[i].Name+" dir=")
		}
	}
	return errs
}

// expandHome replaces a leading "~" of path, alone or before a slash, by
// the user's home folder (HOME; USERPROFILE on Windows, as
// os.UserHomeDir), read through env. "~USER/…", another user's home, is
// refused rather than read as a folder named "~USER" here.
func expandHome(path string, env Env) (string, error) {
	rest, ok := strings.CutPrefix(path, "~")
	if !ok {
		return path, nil
	}
	if rest != "" && rest[0] != '/' && rest[0] != filepath.Separator {
		user, _, _ := strings.Cut(rest, "/")
		return "", fmt.Errorf("%q starts with ~%s, another user's home folder, which flowyprompt does not look up: "+
			"give the full path (or ./%s for a folder of that name here)", path, user, path)
	}
	name := "HOME"
	if runtime.GOOS == "windows" {
		name = "USERPROFILE"
	}
	home, _ := env(name)
	if home == "" {
		return "", fmt.Errorf("%q starts with ~, your home folder, but %s is not set: give the full path, or set %s", path, name, name)
	}
	return filepath.Join(home, rest), nil
}

// checkAddr refuses a listen address that is not HOST:PORT, naming it
// as both places it is set from: serve's flag and make run's ADDR=, which
// passes it on.
func checkAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err == nil && port != "" {
		return nil
	}
	want := "127.0.0.1:3000"
	if n, nerr := strconv.Atoi(addr); nerr == nil && n > 0 && n < 65536 {
		want = net.JoinHostPort("127.0.0.1", addr) // a port alone
	} else if err == nil {
		want = net.JoinHostPort(host, "3000")
	}
	return fmt.Errorf("--addr %q is not HOST:PORT: give e.g. --addr %s (with make: make run ADDR=%s)", addr, want, want)
}

// badTransport explains a --transport that is not stdio or http. The
// names of the HTTP transports are what a client's settings call them
// (Void's "SSE", the Inspector's "Streamable HTTP"), and a user reaches
// for them: both are served by --transport http, each at its own path.
func badTransport(t string) error {
	what := fmt.Sprintf("--transport %q is not stdio or http", t)
	switch strings.ToLower(strings.NewReplacer("-", "", "_", "", " ", "").Replace(t)) {
	case "sse", "legacysse", "httpsse":
		return fmt.Errorf("%s: the legacy SSE transport (Void IDE) is part of the HTTP transport, served at /sse beside "+
			"Streamable HTTP at /mcp; use --transport http, and http://127.0.0.1:3000/sse in the client (for the default --addr)", what)
	case "streamablehttp", "streamable", "shttp":
		return fmt.Errorf("%s: Streamable HTTP is the HTTP transport, served at /mcp (the legacy SSE transport at /sse); "+
			"use --transport http, and http://127.0.0.1:3000/mcp in the client (for the default --addr)", what)
	case "stdio", "http":
		return fmt.Errorf("%s: write it in lower case, --transport %s", what, strings.ToLower(t))
	}
	if c := suggest.Close(t, []string{"stdio", "http"}, 1); len(c) > 0 {
		return fmt.Errorf("%s: did you mean --transport %s?", what, c[0])
	}
	return fmt.Errorf("%s: use --transport stdio (the default, for a client that starts the server) or --transport http (Void at /sse, MCP Inspector at /mcp)", what)
}

// Patterns returns the save tool's allowed name patterns.
func (c *Config) Patterns() []string {
	var out []string
	for _, p := range strings.Split(c.WritePatterns, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// ParseLevel reads a slog level name.
func ParseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("log level %q is not debug, info, warn or error", s)
	}
	return l, nil
}

// Handler is the log's handler writing to w, in the configured format
// and level: Logger's, and the audit log's, which writes to stderr in
// batches of its own.
func (c *Config) Handler(w io.Writer) slog.Handler {
	lvl, _ := ParseLevel(c.LogLevel)
	opts := &slog.HandlerOptions{Level: lvl}
	if c.LogFormat == "json" {
		return slog.NewJSONHandler(w, opts)
	}
	return slog.NewTextHandler(w, opts)
}

// Logger builds the stderr logger. stdout belongs to the protocol.
func (c *Config) Logger(w io.Writer) *slog.Logger {
	l := slog.New(c.Handler(w))
	for _, name := range c.placeholders {
		l.Debug("ignored an unreplaced settings placeholder: the setting is unset", "variable", name)
	}
	return l
}

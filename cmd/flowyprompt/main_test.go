package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
)

// runCLI runs the command in-process with an environment of our own.
func runCLI(t *testing.T, envVars map[string]string, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	lookup := func(k string) (string, bool) {
		if k == "LOG_LEVEL" {
			if v, ok := envVars[k]; ok {
				return v, true
			}
			return "error", true
		}
		v, ok := envVars[k]
		return v, ok
	}
	err := run(context.Background(), args, strings.NewReader(stdin), &out, &errOut, lookup)
	code = 0
	if err != nil {
		code = 1
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
		if ee == nil || ee.err != nil {
			errOut.WriteString(err.Error())
		}
	}
	return out.String(), errOut.String(), code
}

func TestCommands(t *testing.T) {
	dir := t.TempDir()
	good := `{"metadata":{"name":"Hello","description":"Greets","version":"1.0.0"},"variables":[{"name":"who","type":"string","description":"Who","required":true}],"results":[{"name":"G","content":"Hello {{who}}!"}]}`
	bad := `{"metadata":{"name":"Bad","description":"x","version":"1"},"variables":[],"results":[{"name":"s","content":"uses {{ghost}}"}]}`
	if err := os.WriteFile(filepath.Join(dir, "Hello.json"), []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	badDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(badDir, "Bad.json"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	// A subfolder is read, as the server reads it; dot-files are not.
	if err := os.MkdirAll(filepath.Join(dir, "team"), 0o755); err != nil {
		t.Fatal(err)
	}
	sub := strings.Replace(good, `"Hello"`, `"Team_Hello"`, 1)
	if err := os.WriteFile(filepath.Join(dir, "team", "Team_Hello.json"), []byte(sub), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".draft.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A flow beside its template, for a flow's name in two sources.
	flowDir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(flowDir, "flows"), 0o755); err != nil {
		t.Fatal(err)
	}
	for p, data := range map[string]string{"Hello.json": good,
		"flows/greet.json": `{"name":"greet","description":"d","steps":[{"name":"s","template":"Hello","variables":{"who":"Ada"}}]}`} {
		if err := os.WriteFile(filepath.Join(flowDir, p), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A flow that names a template its library lacks, beside a good one.
	badFlowDir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(badFlowDir, "flows"), 0o755); err != nil {
		t.Fatal(err)
	}
	for p, data := range map[string]string{"Hello.json": good,
		"flows/greet.json": `{"name":"greet","description":"d","steps":[{"name":"s","template":"Hello","variables":{"who":"Ada"}}]}`,
		"flows/wave.json":  `{"name":"wave","description":"d","steps":[{"name":"s","template":"Helo","variables":{"who":"Ada"}}]}`} {
		if err := os.WriteFile(filepath.Join(badFlowDir, p), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	warn := `{"metadata":{"name":"Warn","description":"x","version":"1.0.0"},"variables":[],"results":[{"name":"s","content":"uses {{ghost}}"}]}`
	if err := os.WriteFile(filepath.Join(badDir, "Warn.json"), []byte(warn), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		env    map[string]string
		stdin  string
		args   []string
		code   int
		stdout []string // substrings
		stderr []string
		// flags, when set, is every flag stderr's usage lists, and no more:
		// a command's -h must not offer flags that do nothing for it.
		flags []string
	}{
		{name: "no args", args: nil, code: 2, stderr: []string{"Usage:"}},
		{name: "unknown command", args: []string{"frobnicate"}, code: 2, stderr: []string{`unknown command "frobnicate"`}},
		{name: "version", args: []string{"version"}, stdout: []string{"flowyprompt ", " (commit ",
			", " + runtime.Version() + ", " + runtime.GOOS + "/" + runtime.GOARCH + ")\n"}},
		{name: "--version", args: []string{"--version"}, stdout: []string{"flowyprompt ", " (commit ", ", " + runtime.Version() + ", "}},
		{name: "help", args: []string{"help"}, stdout: []string{"flowyprompt serve"}},
		{name: "serve -h", args: []string{"serve", "-h"}, code: 0, stderr: []string{"-templates", "-max-message-size"}},
		{name: "serve help", args: []string{"serve", "-h"},
			stderr: []string{"Usage: flowyprompt serve [flags]", "Run the MCP server", "Example:\n  flowyprompt serve "},
			flags: append(append(append([]string{}, sourceFlagNames...), writeFlagNames...),
				"auth-introspection",
				"addr", "allowed-hosts", "allowed-origins", "auth-audience", "auth-issuer", "auth-policy", "auth-token", "cpuprofile", "idle-timeout", "keepalive",
				"max-forwarded", "max-forwarded-per-client", "max-forwarded-per-session",
				"label", "max-inflight-bytes", "max-message-size", "max-sessions", "max-sessions-per-client", "max-subscriptions", "metrics-addr", "nats", "procs", "public-url", "replica-id", "request-timeout", "state-keys", "transport", "trusted-proxies", "ui")},
		{name: "list help", args: []string{"list", "-h"},
			stderr: []string{"Usage: flowyprompt list", "List the templates", "Example:\n  flowyprompt list "},
			flags:  append([]string{"json"}, sourceFlagNames...)},
		// render reads templates from GitHub too, so the GitHub flags stay;
		// it never saves, so the save tool's go.
		{name: "render help", args: []string{"render", "-h"},
			stderr: []string{"Usage: flowyprompt render NAME", "Render a template", "Example:\n  flowyprompt render "},
			flags:  append([]string{"arg"}, sourceFlagNames...)},
		{name: "validate help", args: []string{"validate", "-h"},
			stderr: []string{"Usage: flowyprompt validate", "Check template files", "Example:\n  flowyprompt validate "},
			flags:  []string{"json", "max-file-size"}},
		// call may run the save tool, so it takes its flags.
		{name: "call help", args: []string{"call", "-h"},
			stderr: []string{"Usage: flowyprompt call TOOL", "Run one MCP tool", "Example:\n  flowyprompt call "},
			flags:  append(append([]string{"json", "state-keys"}, sourceFlagNames...), writeFlagNames...)},
		{name: "check help", args: []string{"check", "-h"},
			stderr: []string{"Usage: flowyprompt check", "Check the configuration", "Example:\n", "-json", "-github-repo"}},
		{name: "export help", args: []string{"export", "-h"},
			stderr: []string{"Usage: flowyprompt export --format", "Write every template in another format", "Example:\n  flowyprompt export "},
			flags:  append([]string{"format", "out"}, sourceFlagNames...)},
		{name: "preview help", args: []string{"preview", "-h"},
			stderr: []string{"Usage: flowyprompt preview", "Serve a page on this machine", "Example:\n  flowyprompt preview "},
			flags:  append([]string{"addr", "open"}, sourceFlagNames...)},
		{name: "preview beyond loopback", args: []string{"preview", "--addr", "0.0.0.0:0"}, code: 2,
			stderr: []string{`--addr "0.0.0.0:0" is not a loopback address`, "serve --transport http --ui"}},
		{name: "ui without http", args: []string{"serve", "--ui"}, code: 2, stderr: []string{"--ui (FLOWYPROMPT_UI) serves the preview page over HTTP: add --transport http"}},
		{name: "preview bad address", args: []string{"preview", "--addr", "localhost"}, code: 2, stderr: []string{`--addr "localhost" is not HOST:PORT`}},
		{name: "version help", args: []string{"version", "-h"},
			stderr: []string{"Usage: flowyprompt version", "Print the version, the commit it was built from, the Go version and the platform.", "Example:\n  flowyprompt version"},
			flags:  []string{}},
		{name: "version extra argument", args: []string{"version", "now"}, code: 2, stderr: []string{"takes no arguments"}},
		// A bad variable that validate never reads does not stop it.
		{name: "validate ignores unrelated env", env: map[string]string{"CACHE_TTL_MS": "soon", "WRITE_ENABLED": "maybe"},
			args: []string{"validate", dir}, stdout: []string{"2 valid, 0 invalid"}},
		{name: "validate bad size env", env: map[string]string{"MAX_FILE_SIZE": "big"}, args: []string{"validate", dir},
			code: 2, stderr: []string{"MAX_FILE_SIZE", "positive integer"}},
		{name: "list built-in", args: []string{"list"}, stdout: []string{"Code_Review", "Brand_Positioning_Strategy", "17 templates from embedded", "Summarize_Text", "Explain_Code", "Customer_Reply"}},
		{name: "list dir", args: []string{"list", "--templates", dir}, stdout: []string{"Hello", "Team_Hello", "who*", "2 templates"}},
		{name: "list json", args: []string{"list", "--json"}, stdout: []string{`"name": "Commit_Message"`, `"kind": "embedded"`}},
		{name: "render", args: []string{"render", "Hello", "--templates", dir, "--arg", "who=Ada"}, stdout: []string{"# Hello\n\nGreets\n\n**Version**: 1.0.0\n\n---\n\nHello Ada!\n"}},
		{name: "render env dir", env: map[string]string{"TEMPLATES_DIR": dir}, args: []string{"render", "Hello", "--arg", "who=Bob"}, stdout: []string{"Hello Bob!"}},
		{name: "render missing", args: []string{"render", "Hello", "--templates", dir}, code: 1, stderr: []string{"MISSING", "who", "how to fix"}},
		{name: "render typo", args: []string{"render", "Helo", "--templates", dir}, code: 1, stderr: []string{"not found", "did you mean: Hello"}},
		{name: "render no name", args: []string{"render"}, code: 2, stderr: []string{"needs a template NAME"}},
		{name: "render bad arg", args: []string{"render", "Hello", "--arg", "novalue"}, code: 2, stderr: []string{"NAME=VALUE"}},
		{name: "validate ok", args: []string{"validate", dir}, stdout: []string{"Hello.json: ok", "team/Team_Hello.json: ok", "2 valid, 0 invalid"}},
		{name: "validate bad", args: []string{"validate", badDir}, code: 1, stdout: []string{"Bad.json: INVALID", "/metadata/version", "Warn.json: ok", "warning", "ghost", "1 valid, 1 invalid"}},
		{name: "validate json", args: []string{"validate", "--json", badDir}, code: 1, stdout: []string{`"pointer": "/metadata/version"`}},
		{name: "list flows", args: []string{"list", "--templates", flowDir}, stdout: []string{"FLOW", "flow:greet", "Hello"}},
		{name: "list flows json", args: []string{"list", "--json", "--templates", flowDir}, stdout: []string{`"flows": [`, `"name": "greet"`, `"template": "Hello"`}},
		{name: "check flows", args: []string{"check", "--templates", flowDir}, stdout: []string{"templates: 1 valid, 0 invalid", "flows:     1 valid: greet"}},
		{name: "validate flows", args: []string{"validate", flowDir}, stdout: []string{"flows/greet.json: ok", "2 valid, 0 invalid"}},
		{name: "validate a bad flow", args: []string{"validate", badFlowDir}, code: 1,
			stdout: []string{"flows/greet.json: ok", "flows/wave.json: INVALID", `/steps/0/template: no template named "Helo"`, "2 valid, 1 invalid"}},
		{name: "validate a flow file", args: []string{"validate", filepath.Join(badFlowDir, "flows", "wave.json")}, code: 1,
			stdout: []string{`no template named "Helo"`, "0 valid, 1 invalid"}},
		{name: "validate missing path", args: []string{"validate", filepath.Join(dir, "nope.json")}, code: 2, stderr: []string{"cannot read"}},
		{name: "validate no path", args: []string{"validate"}, code: 2, stderr: []string{"at least one"}},
		{name: "call list", args: []string{"call", "flowyprompt_list_templates", `{"limit":2}`}, stdout: []string{"## Result", "Listed 2 of 17"}},
		{name: "call render json", args: []string{"call", "flowyprompt_render_template", `{"name":"Hello","arguments":{"who":"Ada"}}`, "--json", "--templates", dir},
			stdout: []string{`"structuredContent"`, `Hello Ada!`}},
		{name: "call tool error", args: []string{"call", "flowyprompt_get_template", `{"name":"Nope"}`}, code: 1, stdout: []string{"TEMPLATE_NOT_FOUND"}},
		{name: "call unknown tool", args: []string{"call", "nope_tool"}, code: 2, stderr: []string{"unknown tool"}},
		{name: "call bad json", args: []string{"call", "flowyprompt_list_templates", "{"}, code: 2, stderr: []string{"not valid JSON"}},
		{name: "bad env", env: map[string]string{"MAX_FILE_SIZE": "lots"}, args: []string{"list"}, code: 2, stderr: []string{"MAX_FILE_SIZE", "positive integer"}},
		{name: "missing dir", args: []string{"list", "--templates", filepath.Join(dir, "missing")}, code: 1, stderr: []string{"missing", "how to fix"}},
		{name: "list sources", args: []string{"list", "--source", "name=ex,examples", "--source", "name=local,dir=" + dir},
			stdout: []string{"local/Hello", "local/Team_Hello", "ex/Commit_Message", "19 templates from multi"}},
		{name: "render bare name from sources", env: map[string]string{"FLOWYPROMPT_SOURCES": "name=ex,examples;name=local,dir=" + dir},
			args: []string{"render", "Hello", "--arg", "who=Ada"}, stdout: []string{"Hello Ada!"}},
		{name: "render namespaced name", args: []string{"render", "local/Hello", "--source", "name=local,dir=" + dir, "--arg", "who=Ada"},
			stdout: []string{"Hello Ada!"}},
		{name: "check sources conflict", args: []string{"check", "--source", "name=a,dir=" + dir, "--source", "name=b,dir=" + dir},
			stdout: []string{"conflicts: 2 name(s)", "Hello: a, b", "Team_Hello: a, b"}},
		{name: "check sources flow conflict", args: []string{"check", "--source", "name=a,dir=" + flowDir, "--source", "name=b,dir=" + flowDir},
			stdout: []string{"conflicts: 2 name(s)", "  Hello: a, b", "  flow:greet: a, b"}},
		{name: "source token refused", args: []string{"list", "--source", "name=t,github=https://github.com/a/b,token=ghp_NotShownAnywhere1"},
			code: 2, stderr: []string{"token= is refused", "token-env="}},
		{name: "serve stdio", args: []string{"serve"}, stdin: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n" +
			`{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"Hello","arguments":{"who":"Zed"}}}` + "\n",
			env: map[string]string{"TEMPLATES_DIR": dir}, stdout: []string{`"protocolVersion":"2024-11-05"`, `Hello Zed!`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, tt.env, tt.stdin, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, stdout, stderr)
			}
			checkOutput(t, stdout, stderr, tt.stdout, tt.stderr)
			if strings.Contains(stdout+stderr, "ghp_NotShownAnywhere1") {
				t.Errorf("the output shows the token given on the command line:\nstdout: %s\nstderr: %s", stdout, stderr)
			}
			if tt.flags != nil {
				got := usageFlags(stderr)
				want := append([]string{}, tt.flags...)
				sort.Strings(want)
				if !slices.Equal(got, want) {
					t.Errorf("usage lists flags %v, want %v:\n%s", got, want, stderr)
				}
			}
		})
	}
}

// TestLinkLeadingOut: a template file that is a symbolic link out of the
// folder is not served, and every command that reads the folder reports it
// as invalid, saying why and how to fix it.
func TestLinkLeadingOut(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "templates")
	secret := `{"metadata":{"name":"Secret","description":"outside","version":"1.0.0"},"variables":[],"results":[{"name":"s","content":"from outside the folder"}]}`
	good := `{"metadata":{"name":"Good","description":"inside","version":"1.0.0"},"variables":[],"results":[{"name":"s","content":"from inside"}]}`
	if err := os.MkdirAll(filepath.Join(base, "outside"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "outside", "secret.json"), []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Good.json"), []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "outside", "secret.json"), filepath.Join(dir, "evil.json")); err != nil {
		t.Fatal(err)
	}
	refused := "symbolic link leading out of the template folder"
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string
	}{
		{name: "validate", args: []string{"validate", dir}, code: 1,
			stdout: []string{"Good.json: ok", "evil.json: INVALID", refused, "1 valid, 1 invalid"}},
		{name: "validate json", args: []string{"validate", "--json", dir}, code: 1,
			stdout: []string{`"code": "INVALID_TEMPLATE"`, refused}},
		{name: "check", args: []string{"check", "--templates", dir}, code: 1,
			stdout: []string{"1 valid, 1 invalid", "evil.json", refused}},
		{name: "list", args: []string{"list", "--templates", dir},
			stdout: []string{"Good", "1 template from", "1 invalid file(s) left out", "evil.json", refused}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, nil, "", tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, stdout, stderr)
			}
			checkOutput(t, stdout, stderr, tt.stdout, nil)
			if strings.Contains(stdout, "Secret") || strings.Contains(stdout, "from outside") {
				t.Errorf("the template outside the folder was read:\n%s", stdout)
			}
		})
	}
}

// The flags of config.RegisterSource and config.RegisterWrite, which the
// help rows of TestCommands expect.
var (
	sourceFlagNames = []string{"cache-dir", "cache-ttl", "github-api-url", "github-labels", "github-path", "github-ref", "github-repo",
		"github-version-lookups", "log-format", "log-level", "max-file-size", "source", "templates"}
	writeFlagNames = []string{"allow-write", "write-allow"}
)

// usageFlags returns the flag names a flag.FlagSet's PrintDefaults listed
// in usage, sorted (PrintDefaults sorts them too).
func usageFlags(usage string) []string {
	names := []string{}
	for _, line := range strings.Split(usage, "\n") {
		if rest, ok := strings.CutPrefix(line, "  -"); ok {
			names = append(names, strings.Fields(rest)[0])
		}
	}
	sort.Strings(names)
	return names
}

// TestServeStdoutIsProtocolOnly: with logging at debug, stdout still holds
// nothing but JSON-RPC lines.
func TestServeStdoutIsProtocolOnly(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n" +
		`garbage` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n"
	stdout, _, code := runCLI(t, map[string]string{"LOG_LEVEL": "debug"}, in, "serve")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 lines, got %d: %s", len(lines), stdout)
	}
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Errorf("not JSON: %q", l)
		}
	}
}

// TestServeCPUProfile: serve --cpuprofile leaves a profile (gzip, as
// pprof writes it) once the session ends, and a path it cannot write is
// refused before serving.
func TestServeCPUProfile(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n"
	path := filepath.Join(t.TempDir(), "serve.pprof")
	stdout, stderr, code := runCLI(t, nil, in, "serve", "--cpuprofile", path)
	if code != 0 || !strings.Contains(stdout, `"id":1`) {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("profile: %d bytes, %v; want a gzip-compressed profile", len(b), err)
	}

	_, stderr, code = runCLI(t, nil, in, "serve", "--cpuprofile", filepath.Join(t.TempDir(), "missing", "p.pprof"))
	if code == 0 || !strings.Contains(stderr, "cannot write the CPU profile") {
		t.Fatalf("unwritable path: exit %d, stderr %q", code, stderr)
	}
}

func TestProcs(t *testing.T) {
	tests := []struct {
		name      string
		flag      int
		env       string
		transport string
		cpus      int
		want      int
		wantApply bool
	}{
		{"stdio: half of two cores", 0, "", "stdio", 2, 1, true},
		{"stdio: half of sixteen", 0, "", "stdio", 16, 8, true},
		{"stdio: at least one", 0, "", "stdio", 1, 1, true},
		{"stdio: an odd count rounds down", 0, "", "stdio", 3, 1, true},
		{"http: the runtime's default", 0, "", "http", 16, 0, false},
		{"--procs wins", 3, "", "stdio", 16, 3, true},
		{"--procs wins over HTTP's default", 3, "", "http", 16, 3, true},
		{"--procs wins over GOMAXPROCS", 2, "6", "stdio", 16, 2, true},
		{"GOMAXPROCS is left alone", 0, "6", "stdio", 16, 0, false},
	}
	for _, tc := range tests {
		n, apply := procs(tc.flag, tc.env, tc.transport, tc.cpus)
		if n != tc.want || apply != tc.wantApply {
			t.Errorf("%s: procs(%d, %q, %q, %d) = %d, %v; want %d, %v", tc.name, tc.flag, tc.env, tc.transport, tc.cpus, n, apply, tc.want, tc.wantApply)
		}
	}
	// A negative count is refused at start, with what to use instead.
	_, stderr, code := runCLI(t, nil, "", "serve", "--procs", "-1")
	if code == 0 || !strings.Contains(stderr, "--procs must be 0") {
		t.Errorf("serve --procs -1: exit %d, stderr %q", code, stderr)
	}
}

// checkOutput fails t for each wanted piece missing from stdout or stderr.
func checkOutput(t *testing.T, stdout, stderr string, wantOut, wantErr []string) {
	t.Helper()
	for _, s := range wantOut {
		if !strings.Contains(stdout, s) {
			t.Errorf("stdout lacks %q:\n%s", s, stdout)
		}
	}
	for _, s := range wantErr {
		if !strings.Contains(stderr, s) {
			t.Errorf("stderr lacks %q:\n%s", s, stderr)
		}
	}
}

// TestVersionLine: make stamps the version and the commit; without them a
// local build reports its VCS revision, and the line always names the Go
// version and the platform the binary was built for.
func TestVersionLine(t *testing.T) {
	defer func(v, c string) { buildVersion, buildCommit = v, c }(buildVersion, buildCommit)
	buildVersion, buildCommit = "v0.3.0", "abc123def456"
	tail := ", " + runtime.Version() + ", " + runtime.GOOS + "/" + runtime.GOARCH + ")\n"
	if out, _, code := runCLI(t, nil, "", "version"); code != 0 || out != "flowyprompt v0.3.0 (commit abc123def456"+tail {
		t.Errorf("version printed %q (exit %d), want %q", out, code, "flowyprompt v0.3.0 (commit abc123def456"+tail)
	}

	// A test binary carries no VCS stamp: the version and commit say so
	// rather than inventing one.
	buildVersion, buildCommit = "", ""
	if out, _, code := runCLI(t, nil, "", "--version"); code != 0 || out != "flowyprompt dev (commit unknown"+tail {
		t.Errorf("--version printed %q (exit %d), want %q", out, code, "flowyprompt dev (commit unknown"+tail)
	}
}

// TestCallContinuesAFlow: with the same state keys, a flow started by one
// flowyprompt call goes on in the next, as across replicas; with other
// keys its handle is refused.
func TestCallContinuesAFlow(t *testing.T) {
	env := map[string]string{"FLOWYPROMPT_STATE_KEYS": base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32))}
	stdout, stderr, code := runCLI(t, env, "", "call", "flowyprompt_start_flow", `{"name":"ship_a_change","arguments":{"diff":"-a\n+b"}}`, "--json")
	if code != 0 {
		t.Fatalf("start_flow: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var started struct {
		StructuredContent struct {
			Handle string `json:"handle"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal([]byte(stdout), &started); err != nil || started.StructuredContent.Handle == "" {
		t.Fatalf("no handle (%v): %s", err, stdout)
	}
	next := `{"handle":"` + started.StructuredContent.Handle + `","output":"Looks good."}`
	tests := []struct {
		name string
		env  map[string]string
		code int
		want string
	}{
		{"the same keys", env, 0, "Step 2 of 3: commit"},
		{"another key", map[string]string{"FLOWYPROMPT_STATE_KEYS": base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))}, 1, "the flow handle was refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, tt.env, "", "call", "flowyprompt_next_flow_step", next)
			if code != tt.code || !strings.Contains(stdout, tt.want) {
				t.Fatalf("exit %d (want %d), want %q in:\n%s\n%s", code, tt.code, tt.want, stdout, stderr)
			}
		})
	}
}

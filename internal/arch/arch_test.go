package arch_test

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/flowyprompt/flowyprompt"

func deps(t *testing.T, pkg string, tags ...string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-tags", strings.Join(tags, ","), module+"/"+pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps -tags %q %s: %v", strings.Join(tags, ","), pkg, err)
	}
	return strings.Fields(string(out))
}

// imports lists pkg's own imports, tests left out.
func imports(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, module+"/"+pkg).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// matches reports whether the import path p is f or inside f.
func matches(p, f string) bool { return p == f || strings.HasPrefix(p, f+"/") }

func TestImportRules(t *testing.T) {
	rules := []struct {
		pkg       string
		forbidden []string
	}{
		{"mcp", []string{module + "/transport", "github.com/r3labs/sse", "github.com/google/go-github", module + "/templates", module + "/internal/app", "go.opentelemetry.io", "github.com/prometheus"}},
		{"templates", []string{module + "/mcp", module + "/transport", module + "/internal/app"}},
		{"render", []string{module + "/mcp", module + "/transport"}},
		// Transports move messages: what a template is, they never know.
		{"transport/stdio", []string{module + "/templates", module + "/internal/app", module + "/render"}},
		{"transport/sse", []string{module + "/templates", module + "/internal/app", module + "/render"}},
		{"transport/streamable", []string{module + "/templates", module + "/internal/app", module + "/render"}},
		{"transport/httpserver", []string{module + "/templates", module + "/internal/app", module + "/render"}},
		// The binary exports OTLP over HTTP only: the gRPC exporters (and
		// autoexport, which links them) cost every platform's binary and
		// the bundle. The registry's types serve the release command only.
		{"cmd/flowyprompt", []string{"go.opentelemetry.io/contrib/exporters/autoexport",
			"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc", "go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc",
			"go.opentelemetry.io/otel/exporters/otlp/otlplog", "github.com/modelcontextprotocol/registry",
			// The OpenID Provider is cmd/testoidc's, for tests (the binary
			// uses only the library's introspection client).
			"github.com/zitadel/oidc/v3/pkg/op"}},
	}
	for _, r := range rules {
		for _, d := range deps(t, r.pkg) {
			for _, f := range r.forbidden {
				if matches(d, f) {
					t.Errorf("%s imports %s (forbidden: %s)", r.pkg, d, f)
				}
			}
		}
	}
}

// TestDesktopBuild: the Claude Desktop bundle's binaries (go build -tags
// desktop, package edition) link none of the team-server features'
// libraries: no OpenTelemetry SDK or exporter, no Prometheus client, no
// NATS client, no gRPC, no protobuf. Each platform's binary in the bundle
// pays for what it links.
func TestDesktopBuild(t *testing.T) {
	forbidden := []string{"go.opentelemetry.io/otel/sdk", "go.opentelemetry.io/otel/exporters", "go.opentelemetry.io/contrib",
		"github.com/prometheus", "github.com/nats-io", "google.golang.org/grpc", "google.golang.org/protobuf"}
	for _, d := range deps(t, "cmd/flowyprompt", "desktop") {
		for _, f := range forbidden {
			if matches(d, f) {
				t.Errorf("the desktop build of cmd/flowyprompt links %s (forbidden: %s)", d, f)
			}
		}
	}
}

// TestPurePackages: the model and rendering are pure. None of their own
// imports may reach files, the network or the system (their dependencies,
// such as the schema library behind templates, are not their business):
// reading a folder belongs to templates/folder, fetching to github.
func TestPurePackages(t *testing.T) {
	doesIO := []string{"os", "path/filepath", "syscall", "net", "github.com/fsnotify/fsnotify"}
	rules := []struct {
		pkg       string
		forbidden []string
		why       string
	}{
		// templates reads the examples compiled into the binary through
		// io/fs (an embed.FS), which is no I/O.
		{"templates", doesIO, "the template model does no I/O of its own"},
		// render runs on every prompt with values from clients: no unsafe
		// either (internal/jsonstr, fuzzed, is where unsafe may live).
		{"render", append(doesIO, "io/fs", "unsafe"), "rendering does no I/O and uses no unsafe"},
	}
	for _, r := range rules {
		t.Run(r.pkg, func(t *testing.T) {
			for _, imp := range imports(t, r.pkg) {
				for _, f := range r.forbidden {
					if matches(imp, f) {
						t.Errorf("%s imports %s: %s", r.pkg, imp, r.why)
					}
				}
			}
		})
	}
}

// TestUnsafeOnlyInJSONStr: unsafe lives in one small, fuzzed leaf,
// internal/jsonstr, and nowhere else in the product, tests included: no
// memory a package hands another may alias a buffer it reuses.
func TestUnsafeOnlyInJSONStr(t *testing.T) {
	out, err := exec.Command("go", "list", "-f",
		`{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`, module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] == module+"/internal/jsonstr" {
			continue
		}
		for _, imp := range f[1:] {
			if imp == "unsafe" {
				t.Errorf("%s imports unsafe: only internal/jsonstr may", f[0])
			}
		}
	}
}

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/registry/pkg/model"
	"github.com/xeipuuv/gojsonschema"
)

// registrySchema is the MCP Registry's published server.json schema of
// the version our server.json names ($schema, model.CurrentSchemaURL).
// It is the copy the registry itself validates with
// (internal/validators/schemas/<version>.json, synced from
// static.modelcontextprotocol.io), read from the registry's Go module,
// whose bytes go.sum pins: no copy of it lives in this repository, and
// upgrading the module upgrades both the types and the schema.
func registrySchema(t *testing.T) []byte {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/modelcontextprotocol/registry").Output()
	if err != nil {
		t.Fatalf("go list -m github.com/modelcontextprotocol/registry: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		t.Fatal("the registry module is not in the module cache: run go mod download")
	}
	b, err := os.ReadFile(filepath.Join(dir, "internal", "validators", "schemas", model.CurrentSchemaVersion+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var head struct {
		ID     string `json:"$id"`
		Schema string `json:"$schema"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		t.Fatal(err)
	}
	// gojsonschema implements draft-07 (and earlier): a schema of a
	// later draft would be read by draft-07 rules.
	if head.ID != model.CurrentSchemaURL || head.Schema != "http://json-schema.org/draft-07/schema#" {
		t.Fatalf("schema $id %q, $schema %q; want %q in draft-07", head.ID, head.Schema, model.CurrentSchemaURL)
	}
	return b
}

// noNetwork fails the test if anything (a remote $ref) reaches for the
// network through the default client, which gojsonschema uses.
type noNetwork struct{ t *testing.T }

func (n noNetwork) RoundTrip(r *http.Request) (*http.Response, error) {
	n.t.Errorf("schema validation reached for %s", r.URL)
	return nil, errors.New("no network in this test")
}

// compileRegistrySchema compiles the schema with the network shut: every
// $ref in it is local (#/definitions/…).
func compileRegistrySchema(t *testing.T) *gojsonschema.Schema {
	t.Helper()
	old := http.DefaultClient.Transport
	http.DefaultClient.Transport = noNetwork{t}
	t.Cleanup(func() { http.DefaultClient.Transport = old })
	s, err := gojsonschema.NewSchema(gojsonschema.NewBytesLoader(registrySchema(t)))
	if err != nil {
		t.Fatalf("compile the registry's schema: %v", err)
	}
	return s
}

func validate(t *testing.T, s *gojsonschema.Schema, doc any) []string {
	t.Helper()
	res, err := s.Validate(gojsonschema.NewGoLoader(doc))
	if err != nil {
		t.Fatal(err)
	}
	var errs []string
	for _, e := range res.Errors() {
		errs = append(errs, e.String())
	}
	return errs
}

// fakeBundle writes a file standing for the bundle and returns its path
// and SHA-256.
func fakeBundle(t *testing.T) (string, string) {
	t.Helper()
	data := []byte("a bundle, as mcpb pack writes it")
	p := filepath.Join(t.TempDir(), "flowyprompt.mcpb")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return p, hex.EncodeToString(sum[:])
}

// TestServerJSON: the server.json of a tagged release validates against
// the registry's published schema and says what the registry needs: an
// mcpb package at the release's download URL with the bundle's SHA-256,
// over stdio, under the reverse-DNS name GitHub proves.
func TestServerJSON(t *testing.T) {
	schema := compileRegistrySchema(t)
	bundle, sum := fakeBundle(t)
	tests := []struct {
		describe, version, url string
	}{
		{"v0.3.0", "0.3.0", "https://github.com/flowyprompt/flowyprompt/releases/download/v0.3.0/flowyprompt.mcpb"},
		{"v1.0.0-rc.10", "1.0.0-rc.10", "https://github.com/flowyprompt/flowyprompt/releases/download/v1.0.0-rc.10/flowyprompt.mcpb"},
		// Not a tag: the version is still valid; the URL names a release
		// that does not exist, which is why only a tag is published.
		{"v0.3.0-5-gabc1234", "0.3.1-dev.5+gabc1234", "https://github.com/flowyprompt/flowyprompt/releases/download/v0.3.0-5-gabc1234/flowyprompt.mcpb"},
	}
	for _, tt := range tests {
		t.Run(tt.describe, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "server.json")
			if err := run([]string{"server", "-version", tt.describe, "-bundle", bundle, "-out", out}); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			var doc map[string]any
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			if errs := validate(t, schema, doc); len(errs) > 0 {
				t.Fatalf("server.json does not validate against %s:\n%s\n%s", model.CurrentSchemaURL, strings.Join(errs, "\n"), b)
			}
			var got struct {
				Schema     string `json:"$schema"`
				Name       string `json:"name"`
				Version    string `json:"version"`
				Repository struct {
					URL    string `json:"url"`
					Source string `json:"source"`
				} `json:"repository"`
				Packages []struct {
					RegistryType string `json:"registryType"`
					Identifier   string `json:"identifier"`
					Version      string `json:"version"`
					FileSHA256   string `json:"fileSha256"`
					Transport    struct {
						Type string `json:"type"`
					} `json:"transport"`
				} `json:"packages"`
			}
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if got.Schema != model.CurrentSchemaURL || got.Name != "io.github.flowyprompt/flowyprompt" || got.Version != tt.version ||
				got.Repository.URL != "https://github.com/flowyprompt/flowyprompt" || got.Repository.Source != "github" {
				t.Errorf("server: %+v", got)
			}
			if len(got.Packages) != 1 {
				t.Fatalf("%d packages, want 1", len(got.Packages))
			}
			p := got.Packages[0]
			if p.RegistryType != "mcpb" || p.Identifier != tt.url || p.Version != tt.version || p.FileSHA256 != sum || p.Transport.Type != "stdio" {
				t.Errorf("package: %+v; want mcpb at %s, version %s, sha256 %s, stdio", p, tt.url, tt.version, sum)
			}
		})
	}
}

// TestRegistrySchemaRefuses: the schema as compiled here does check what
// matters, so a pass above means something.
func TestRegistrySchemaRefuses(t *testing.T) {
	schema := compileRegistrySchema(t)
	bundle, _ := fakeBundle(t)
	b, err := serverJSON("v0.3.0", bundle)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		mutate func(doc map[string]any)
		field  string
	}{
		{"name without a namespace", func(d map[string]any) { d["name"] = "flowyprompt" }, "name"},
		{"description over 100 characters", func(d map[string]any) { d["description"] = strings.Repeat("x", 101) }, "description"},
		{"no version", func(d map[string]any) { delete(d, "version") }, "version"},
		{"sha256 not lowercase hex", func(d map[string]any) { pkg(d)["fileSha256"] = strings.Repeat("A", 64) }, "fileSha256"},
		{"no transport", func(d map[string]any) { delete(pkg(d), "transport") }, "transport"},
		{"version latest", func(d map[string]any) { pkg(d)["version"] = "latest" }, "version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var doc map[string]any
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			tt.mutate(doc)
			errs := validate(t, schema, doc)
			if !strings.Contains(strings.Join(errs, "\n"), tt.field) {
				t.Errorf("errors %q do not name %s", errs, tt.field)
			}
		})
	}
}

func pkg(doc map[string]any) map[string]any {
	return doc["packages"].([]any)[0].(map[string]any)
}

// TestServerJSONNeedsBundle: without the bundle there is no checksum,
// and no server.json.
func TestServerJSONNeedsBundle(t *testing.T) {
	out := filepath.Join(t.TempDir(), "server.json")
	err := run([]string{"server", "-version", "v0.3.0", "-bundle", filepath.Join(t.TempDir(), "missing.mcpb"), "-out", out})
	if err == nil || !strings.Contains(err.Error(), "missing.mcpb") {
		t.Errorf("err %v, want one naming the missing bundle", err)
	}
	if _, serr := os.Stat(out); !errors.Is(serr, os.ErrNotExist) {
		t.Errorf("server.json written without a bundle: %v", serr)
	}
}

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	apiv0 "github.com/modelcontextprotocol/registry/pkg/api/v0"
	"github.com/modelcontextprotocol/registry/pkg/model"
)

// The MCP Registry's entry for flowyprompt. The name is in the reverse-DNS
// form the registry proves by GitHub: io.github.<owner>/<repository>.
const (
	registryName = "io.github.flowyprompt/flowyprompt"
	repoURL      = "https://github.com/flowyprompt/flowyprompt"
	// At most 100 characters, by the registry's schema.
	registryDescription = "Your team's prompt templates as MCP prompts and tools: from a folder, GitHub, or built-in examples."
)

// bundleURL is where a release's bundle is downloaded from: the GitHub
// release named after the tag, which is what `git describe` prints for a
// tagged commit, with the bundle under its own name.
func bundleURL(tag, bundle string) string {
	return repoURL + "/releases/download/" + url.PathEscape(tag) + "/" + url.PathEscape(filepath.Base(bundle))
}

// serverJSON renders the server.json that publishes a release in the MCP
// Registry: one package of type mcpb, the bundle at its release URL with
// its SHA-256, run over stdio. describe is the release's tag as `git
// describe` prints it; the versions are its semantic version, as in the
// bundle's manifest.
func serverJSON(describe, bundle string) ([]byte, error) {
	v, err := semver(describe)
	if err != nil {
		return nil, err
	}
	sum, err := fileSHA256(bundle)
	if err != nil {
		return nil, fmt.Errorf("server.json: %w", err)
	}
	s := apiv0.ServerJSON{
		Schema:      model.CurrentSchemaURL,
		Name:        registryName,
		Title:       "flowyprompt",
		Description: registryDescription,
		Repository:  &model.Repository{URL: repoURL, Source: "github"},
		Version:     v,
		WebsiteURL:  repoURL,
		Packages: []model.Package{{
			RegistryType: model.RegistryTypeMCPB,
			Identifier:   bundleURL(strings.TrimSpace(describe), bundle),
			Version:      v,
			FileSHA256:   sum,
			Transport:    model.Transport{Type: model.TransportTypeStdio},
		}},
	}
	b, err := json.MarshalIndent(&s, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("server.json: %w", err)
	}
	return append(b, '\n'), nil
}

// writeServerJSON writes server.json for the bundle to out.
func writeServerJSON(out, describe, bundle string) error {
	b, err := serverJSON(describe, bundle)
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		return fmt.Errorf("server.json: %w", err)
	}
	return nil
}

// fileSHA256 is a file's SHA-256, in lowercase hex.
func fileSHA256(path string) (string, error) {
	h := sha256.New()
	if err := copyFile(h, path); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fakegithub"
)

// rssPerLibraryByte bounds what serving a library may add to the server's
// resident set, per byte of the library's files: the parsed templates and
// the bytes they came from, what the load left for the collector, and the
// heap room the runtime keeps.
const rssPerLibraryByte = 7

// TestBinaryMemoryPerLibrarySize: a server over a GitHub library of 500 and
// of 2,000 templates of about 4 KB each has, once prompts/list has answered,
// a resident set at most rssPerLibraryByte times the library's size above
// that of a server over the built-in examples: on a first start, which
// downloads the library, and on a restart from the disk cache.
func TestBinaryMemoryPerLibrarySize(t *testing.T) {
	base := listedRSS(t, 0, nil, "")
	for _, n := range []int{500, 2000} {
		fake := fakegithub.New("acme", "prompts")
		t.Cleanup(fake.Close)
		fake.SetToken(cliToken)
		lib := fakegithub.GenerateLibrary(fakegithub.LibraryOptions{Valid: n, TemplateBytes: 4096})
		fake.PutFiles(lib.Files)
		var size int64
		for _, b := range lib.Files {
			size += int64(len(b))
		}
		var env []string
		for k, v := range githubEnv(fake, t.TempDir(), nil) {
			env = append(env, k+"="+v)
		}
		for _, start := range []string{"first start", "restart from the disk cache"} {
			fake.Reset()
			rss := listedRSS(t, n, env, "")
			// A first start downloads the library (as one archive), a
			// restart nothing.
			if downloads := fake.Count(fakegithub.RouteBlob) + fake.Downloads(); (downloads == 0) != (start != "first start") {
				t.Fatalf("%d templates, %s: %d downloads", n, start, downloads)
			}
			grew := rss - base
			t.Logf("%d templates, %.1f MB, %s: RSS %.1f MB, %.1f MB over the built-in examples' %.1f MB: %.1f bytes per library byte",
				n, mb(size), start, mb(rss), mb(grew), mb(base), float64(grew)/float64(size))
			if grew > rssPerLibraryByte*size {
				t.Errorf("%d templates (%.1f MB of files), %s: the server's RSS grew by %.1f MB, want at most %d× the library (%.1f MB)",
					n, mb(size), start, mb(grew), rssPerLibraryByte, mb(rssPerLibraryByte*size))
			}
		}
	}
}

// TestBinaryMemoryPerFolderLibrarySize: a server over a template folder
// of 500 and of 2,000 templates of about 4 KB each (the GitHub test's
// library, written to disk) has, once prompts/list has answered and the
// folder's watcher has read the folder again (its first rebuild, which
// catches up with changes made during the load), a resident set at most
// rssPerLibraryByte times the folder's size above that of a server over
// the built-in examples.
func TestBinaryMemoryPerFolderLibrarySize(t *testing.T) {
	base := listedRSS(t, 0, nil, "")
	for _, n := range []int{500, 2000} {
		lib := fakegithub.GenerateLibrary(fakegithub.LibraryOptions{Valid: n, TemplateBytes: 4096})
		dir := filepath.Join(t.TempDir(), "templates")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		var size int64
		for p, b := range lib.Files {
			if path, ok := strings.CutPrefix(p, "templates/"); ok {
				if err := os.WriteFile(filepath.Join(dir, path), b, 0o644); err != nil {
					t.Fatal(err)
				}
				size += int64(len(b))
			}
		}
		// The watcher's rebuild finds every file as the load left it.
		rss := listedRSS(t, n, []string{"TEMPLATES_DIR=" + dir, "LOG_LEVEL=debug"},
			fmt.Sprintf("templates=%d invalid=0 unchanged=%d", n, n))
		grew := rss - base
		t.Logf("%d templates, %.1f MB in a folder: RSS %.1f MB, %.1f MB over the built-in examples' %.1f MB: %.1f bytes per library byte",
			n, mb(size), mb(rss), mb(grew), mb(base), float64(grew)/float64(size))
		if grew > rssPerLibraryByte*size {
			t.Errorf("%d templates (%.1f MB of files in a folder): the server's RSS grew by %.1f MB, want at most %d× the library (%.1f MB)",
				n, mb(size), mb(grew), rssPerLibraryByte, mb(rssPerLibraryByte*size))
		}
	}
}

// listedRSS starts the HTTP server with env, asks for prompts/list (its
// first page), checks that /healthz counts want templates (any, for 0),
// waits until the server has logged settled (unless empty), and returns
// the server's RSS then.
func listedRSS(t *testing.T, want int, env []string, settled string) int64 {
	t.Helper()
	s := startHTTP(t, 0, env...)
	defer s.Stop()
	res, body := s.post(t, "/mcp", initializeMsg)
	session := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != http.StatusOK || session == "" {
		s.fatalf(t, "POST /mcp initialize: %s, session %q, body %q", res.Status, session, body)
	}
	req, err := http.NewRequest(http.MethodPost, "http://"+s.addr+"/mcp",
		strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"prompts/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	res, err = client.Do(req)
	if err != nil {
		s.fatalf(t, "POST /mcp prompts/list: %v", err)
	}
	body, err = io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		s.fatalf(t, "POST /mcp prompts/list: %v", err)
	}
	var answer struct {
		Result struct {
			Prompts []struct{ Name string } `json:"prompts"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &answer); err != nil || len(answer.Result.Prompts) == 0 {
		t.Fatalf("prompts/list: no prompts (%v): %.300s", err, body)
	}
	if n, _ := s.health(t)["templates"].(float64); n == 0 || want > 0 && int(n) != want {
		t.Fatalf("/healthz counts %v templates, want %d", n, want)
	}
	if settled != "" && !s.waitOutput(settled, 30*time.Second) {
		s.fatalf(t, "the server did not log %q within 30s; its output ends:\n%s", settled, s.Output())
	}
	m, err := readMemory(s.PID())
	if err != nil {
		t.Fatal(err)
	}
	return m.RSS
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }

// Command fakegithub runs the fake GitHub API of internal/fakegithub as a
// process, for end-to-end tests that point the real binary at it through
// GITHUB_API_URL. It serves on loopback only, prints its addresses as one
// JSON line on stdout, exposes a small control API, and exits when stdin
// closes or on SIGTERM. A test merges a pull request on the API's own
// address with POST /_merge/{number}, as internal/fakegithub serves it.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/flowyprompt/flowyprompt/internal/fakegithub"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fakegithub:", err)
		os.Exit(1)
	}
}

func run() error {
	valid := flag.Int("valid", 140, "valid templates to generate")
	invalid := flag.Int("invalid", 6, "invalid templates to generate")
	oversized := flag.Int("oversized", 4, "oversized templates to generate")
	templateBytes := flag.Int("template-bytes", 0, "make each valid template about this many bytes, placeholder-dense (0: one short section)")
	token := flag.String("token", "", "require this token (empty: no auth)")
	readOnly := flag.String("read-only-token", "", "also accept this token for reads, refusing its writes with 403 as GitHub does a fine-grained token without write access")
	flag.Parse()

	gh := fakegithub.New("acme", "prompts")
	defer gh.Close()
	if *token != "" {
		gh.SetToken(*token)
	}
	if *readOnly != "" {
		gh.SetReadOnlyToken(*readOnly)
	}
	lib := fakegithub.GenerateLibrary(fakegithub.LibraryOptions{Valid: *valid, Invalid: *invalid, Oversized: *oversized, TemplateBytes: *templateBytes})
	gh.PutFiles(lib.Files)
	gh.Reset()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	ctl := &http.Server{Handler: control(gh)}
	go func() { _ = ctl.Serve(ln) }()
	defer ctl.Close()

	if err := json.NewEncoder(os.Stdout).Encode(map[string]string{
		"api": gh.URL(), "repo": gh.RepoURL(), "control": "http://" + ln.Addr().String(),
	}); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); stop() }()
	<-ctx.Done()
	return nil
}

// control lets a test change the repository and read request counts.
func control(gh *fakegithub.Server) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /requests", func(w http.ResponseWriter, _ *http.Request) {
		byStatus := map[string]int{}
		for _, r := range gh.Requests() {
			byStatus[strconv.Itoa(r.Status)]++
		}
		writeJSON(w, map[string]any{"total": gh.Total(), "byStatus": byStatus,
			"commit": gh.Count(fakegithub.RouteCommit), "tree": gh.Count(fakegithub.RouteTree), "blob": gh.Count(fakegithub.RouteBlob),
			"tarball": gh.Count(fakegithub.RouteTarball), "downloads": gh.Downloads()})
	})
	mux.HandleFunc("GET /pulls", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, gh.PullRequests()) })
	mux.HandleFunc("GET /head", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]string{"commit": gh.BranchHead(r.URL.Query().Get("branch"))})
	})
	mux.HandleFunc("POST /reset", func(w http.ResponseWriter, _ *http.Request) { gh.Reset(); writeJSON(w, map[string]bool{"ok": true}) })
	mux.HandleFunc("POST /files", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		writeJSON(w, map[string]string{"commit": gh.PutFile(r.URL.Query().Get("path"), body)})
	})
	mux.HandleFunc("POST /fault", func(w http.ResponseWriter, r *http.Request) {
		status, _ := strconv.Atoi(r.URL.Query().Get("status"))
		gh.SetFault(status)
		writeJSON(w, map[string]int{"status": status})
	})
	mux.HandleFunc("POST /down", func(w http.ResponseWriter, r *http.Request) {
		gh.SetDown(r.URL.Query().Get("on") == "1")
		writeJSON(w, map[string]bool{"ok": true})
	})
	branchControl(mux, gh)
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

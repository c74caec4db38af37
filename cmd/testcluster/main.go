// Command testcluster runs a whole flowyprompt cluster on loopback for
// end-to-end tests and measurements: an embedded NATS server with
// JetStream, the fake GitHub API of internal/fakegithub holding a generated
// library, N `flowyprompt serve --transport http --nats URL --replica-id rI`
// processes, and a round-robin reverse proxy in front of them that, like a
// load balancer without sticky sessions, sends most requests of a session
// to a replica that does not hold it.
//
// It prints one JSON line on stdout,
//
//	{"proxy":URL,"control":URL,"replicas":[{"id","url","pid"}],"nats":URL,
//	 "github":{"api","repo","control"}}
//
// serves a control API (see control), and exits when stdin closes or on
// SIGTERM, ending its children. With -bench it instead measures requests
// per second and the replicas' CPU per request through the proxy, with one
// replica and with three, and prints the results.
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
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fakegithub"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "testcluster:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg := config{}
	flag.StringVar(&cfg.bin, "bin", os.Getenv("FLOWYPROMPT_BIN"), "the flowyprompt `binary` (env FLOWYPROMPT_BIN; default bin/flowyprompt)")
	flag.IntVar(&cfg.replicas, "replicas", 3, "how many replicas")
	flag.IntVar(&cfg.templates, "templates", 150, "valid templates in the fake GitHub library")
	flag.DurationVar(&cfg.cacheTTL, "cache-ttl", 3*time.Second, "the replicas' CACHE_TTL_MS")
	flag.StringVar(&cfg.token, "token", "", "GitHub token the fake API requires and the replicas send (empty: none)")
	flag.StringVar(&cfg.logLevel, "log-level", "info", "the replicas' LOG_LEVEL")
	flag.BoolVar(&cfg.verbose, "v", false, "copy the replicas' logs to stderr, prefixed with their id")
	flag.BoolVar(&cfg.sticky, "sticky", false, "route a session's requests to the replica that opened it (default: round robin, most cross)")
	bench := flag.Bool("bench", false, "measure throughput and CPU per request with 1 and 3 replicas, print the results and exit")
	benchReqs := flag.Int("bench-requests", 20000, "-bench: requests per run at most")
	benchTime := flag.Duration("bench-time", 15*time.Second, "-bench: duration of a run at most")
	benchClients := flag.Int("bench-clients", 8, "-bench: concurrent clients")
	flag.Parse()

	if cfg.bin == "" {
		cfg.bin = filepath.Join("bin", "flowyprompt")
	}
	bin, err := filepath.Abs(cfg.bin)
	if err != nil {
		return fmt.Errorf("binary path: %w", err)
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("flowyprompt binary: %w (build it with go build -o bin/flowyprompt ./cmd/flowyprompt, or set -bin / FLOWYPROMPT_BIN)", err)
	}
	cfg.bin = bin

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *bench {
		return runBench(ctx, cfg, benchOptions{requests: *benchReqs, duration: *benchTime, clients: *benchClients}, os.Stdout)
	}

	c, err := newCluster(cfg)
	if err != nil {
		return err
	}
	defer c.close()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("control listen: %w", err)
	}
	ctl := &http.Server{Handler: control(c), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = ctl.Serve(ln) }()
	defer ctl.Close()
	base := "http://" + ln.Addr().String()

	reps := []map[string]any{}
	for _, r := range c.reps {
		url, pid, _ := r.info()
		reps = append(reps, map[string]any{"id": r.id, "url": url, "pid": pid})
	}
	if err := json.NewEncoder(os.Stdout).Encode(map[string]any{
		"proxy": c.proxy.url(), "control": base, "replicas": reps, "nats": c.nats.URL(),
		"github": map[string]string{"api": c.gh.URL(), "repo": c.gh.RepoURL(), "control": base + "/github"},
	}); err != nil {
		return fmt.Errorf("print addresses: %w", err)
	}
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); stop() }()
	<-ctx.Done()
	return nil
}

// control is the API a test drives the cluster with:
//
//	GET  /github/requests        requests to the fake GitHub: total, per route, per status
//	POST /github/reset           forget the requests counted so far
//	POST /github/files?path=P    commit the body as file P on main
//	POST /github/fault?status=S  answer every request with S (0: stop)
//	POST /replicas/{id}/kill     SIGKILL the replica
//	POST /replicas/{id}/start    start it again (same id, port and cache)
//	GET  /replicas/{id}/log      the tail of its log
//	POST /nats/stop, /nats/start stop or start the NATS server (same port and store)
//	GET  /health                 every replica's /healthz, and whether NATS runs
//	GET  /stats                  the proxy's per-replica counters
//	POST /stats/reset            zero them
//	GET  /sessions               session id → the replica that opened it, as the proxy saw
func control(c *cluster) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /github/requests", func(w http.ResponseWriter, _ *http.Request) {
		byStatus, byRoute := map[string]int{}, map[string]int{}
		for _, r := range c.gh.Requests() {
			byStatus[strconv.Itoa(r.Status)]++
			route := r.Pattern
			if route == "" {
				route = "unmatched"
			}
			byRoute[route]++
		}
		writeJSON(w, http.StatusOK, map[string]any{"total": c.gh.Total(), "byStatus": byStatus, "byRoute": byRoute,
			"commit": byRoute[fakegithub.RouteCommit],
			"tree":   byRoute[fakegithub.RouteTree],
			"blob":   byRoute[fakegithub.RouteBlob]})
	})
	mux.HandleFunc("POST /github/reset", func(w http.ResponseWriter, _ *http.Request) {
		c.gh.Reset()
		writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
	})
	mux.HandleFunc("POST /github/files", func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.Query().Get("path")
		if path == "" {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "path is required"})
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"commit": c.gh.PutFile(path, body)})
	})
	mux.HandleFunc("POST /github/fault", func(w http.ResponseWriter, r *http.Request) {
		status, _ := strconv.Atoi(r.URL.Query().Get("status"))
		c.gh.SetFault(status)
		writeJSON(w, http.StatusOK, map[string]int{"status": status})
	})
	mux.HandleFunc("POST /replicas/{id}/kill", func(w http.ResponseWriter, r *http.Request) {
		rep := c.replica(r.PathValue("id"))
		if rep == nil {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such replica"})
			return
		}
		if err := rep.kill(); err != nil {
			writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"killed": rep.id})
	})
	mux.HandleFunc("POST /replicas/{id}/start", func(w http.ResponseWriter, r *http.Request) {
		rep := c.replica(r.PathValue("id"))
		if rep == nil {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such replica"})
			return
		}
		if err := rep.start(); err != nil {
			writeJSON(w, http.StatusConflict, map[string]string{"error": err.Error()})
			return
		}
		url, pid, _ := rep.info()
		writeJSON(w, http.StatusOK, map[string]any{"id": rep.id, "url": url, "pid": pid})
	})
	mux.HandleFunc("GET /replicas/{id}/log", func(w http.ResponseWriter, r *http.Request) {
		rep := c.replica(r.PathValue("id"))
		if rep == nil {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such replica"})
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, rep.log.String())
	})
	mux.HandleFunc("POST /nats/stop", func(w http.ResponseWriter, _ *http.Request) {
		c.nats.Stop()
		writeJSON(w, http.StatusOK, map[string]bool{"running": false})
	})
	mux.HandleFunc("POST /nats/start", func(w http.ResponseWriter, _ *http.Request) {
		if err := c.nats.Start(); err != nil {
			writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, map[string]bool{"running": true})
	})
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		out := map[string]any{}
		for _, rep := range c.reps {
			url, pid, alive := rep.info()
			h := map[string]any{"url": url, "pid": pid, "alive": alive}
			status, body, err := rep.health(r.Context())
			switch {
			case err != nil:
				h["error"] = err.Error()
			default:
				h["status"] = status
				var v any
				if json.Unmarshal(body, &v) == nil {
					h["healthz"] = v
				}
			}
			out[rep.id] = h
		}
		writeJSON(w, http.StatusOK, map[string]any{"replicas": out, "nats": c.nats.Running()})
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, c.proxy.stats())
	})
	mux.HandleFunc("GET /sessions", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, c.proxy.sessions())
	})
	mux.HandleFunc("POST /stats/reset", func(w http.ResponseWriter, _ *http.Request) {
		c.proxy.resetStats()
		writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
	})
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	// An error here is a client gone away: nobody is left to tell.
	_ = json.NewEncoder(w).Encode(v)
}

//go:build linux

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/natstest"
	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats-server/v2/server"
)

// TestBinaryHealthzListsInvalidFiles: /healthz asked with the access
// token names each file left out of the library with its error code and
// message, not only how many there are; asked without it, as anyone who
// reaches the listener may, it counts them by code and shows no path (the
// folder's, or a file's) and no message.
func TestBinaryHealthzListsInvalidFiles(t *testing.T) {
	t.Parallel()
	const token = "h3althz-t0ken"
	dir := t.TempDir()
	good, err := os.ReadFile(filepath.Join("..", "..", "templates", "examples", "Bug_Triage.json"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"Bug_Triage.json": string(good),
		"broken.json":     `{"metadata": `,
		"huge.json":       `{"metadata":{"name":"huge"},"template":"` + strings.Repeat("x", 200_000) + `"}`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := startHTTP(t, 0, "TEMPLATES_DIR="+dir, "MCP_AUTH_TOKEN="+token)
	report := s.healthWith(t, token)
	if report["templates"] != float64(1) || report["invalid"] != float64(2) {
		t.Errorf("templates %v, invalid %v; want 1 and 2", report["templates"], report["invalid"])
	}
	list, ok := report["invalid_files"].([]any)
	if !ok {
		t.Fatalf("/healthz has no invalid_files list: %v", report)
	}
	var got []map[string]any
	for _, item := range list {
		m, _ := item.(map[string]any)
		if msg, _ := m["message"].(string); msg == "" {
			t.Errorf("invalid file %v has no message", m["path"])
		}
		got = append(got, map[string]any{"path": m["path"], "code": m["code"]})
	}
	want := []map[string]any{
		{"path": "broken.json", "code": "INVALID_TEMPLATE"},
		{"path": "huge.json", "code": "TEMPLATE_TOO_LARGE"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("invalid_files (-want +got):\n%s", diff)
	}
	if loc, _ := report["source"].(map[string]any)["location"].(string); loc != dir {
		t.Errorf("source.location = %q, want the folder %q", loc, dir)
	}

	for _, sent := range []string{"", "wr0ng"} {
		report := s.healthWith(t, sent)
		raw, _ := json.Marshal(report)
		for _, secret := range []string{dir, "broken.json", "huge.json", "invalid_files", "message", "location"} {
			if strings.Contains(string(raw), secret) {
				t.Errorf("/healthz with token %q shows %q: %s", sent, secret, raw)
			}
		}
		codes := map[string]any{"INVALID_TEMPLATE": float64(1), "TEMPLATE_TOO_LARGE": float64(1)}
		if diff := cmp.Diff(codes, report["invalid_codes"]); diff != "" || report["invalid"] != float64(2) || report["templates"] != float64(1) {
			t.Errorf("/healthz with token %q: templates %v, invalid %v, invalid_codes (-want +got):\n%s", sent, report["templates"], report["invalid"], diff)
		}
		if kind := report["source"].(map[string]any)["kind"]; kind != "directory" {
			t.Errorf("/healthz with token %q: source.kind %v, want directory", sent, kind)
		}
	}
}

// TestBinaryHealthzShowsTheCluster: with --nats the report names this
// replica and the link's state; while NATS is down the replica keeps
// serving and says it is degraded, and it rejoins when NATS is back.
func TestBinaryHealthzShowsTheCluster(t *testing.T) {
	t.Parallel()
	nats := natstest.Start(t)
	s := startHTTP(t, 0, "NATS_URL="+nats.URL(), clusterKeysEnv, "FLOWYPROMPT_REPLICA_ID=r1")
	cluster := func(report map[string]any) map[string]any {
		c, ok := report["cluster"].(map[string]any)
		if !ok {
			t.Fatalf("/healthz has no cluster section: %v", report)
		}
		return c
	}
	report := s.joined(t)
	if c := cluster(report); c["replica"] != "r1" || report["status"] != "ok" {
		t.Errorf("status %v, cluster %v; want ok and replica r1", report["status"], c)
	}

	// The replica logs each change of the link as /healthz comes to show
	// it (logJoined, logLinkLost): the line is the event to wait for.
	lost := s.expect(logLinkLost)
	nats.Stop()
	s.await(t, lost, "the link to drop")
	report = s.health(t)
	if c := cluster(report); c["connected"] != false || report["status"] != "degraded" || report["templates"] == float64(0) {
		t.Errorf("without NATS: connected %v, status %v, templates %v; want degraded and still serving", c["connected"], report["status"], report["templates"])
	}
	back := s.expect(logJoined)
	nats.Restart()
	s.await(t, back, "the replica to rejoin")
	report = s.health(t)
	if c := cluster(report); c["connected"] != true || report["status"] != "ok" {
		t.Errorf("after NATS came back: connected %v, status %v; want true and ok", c["connected"], report["status"])
	}
}

// TestBinaryNATSPasswordStaysSecret: a password in the NATS URL reaches the
// server but never the log or /healthz.
func TestBinaryNATSPasswordStaysSecret(t *testing.T) {
	t.Parallel()
	const password = "n4ts-s3cret-pw"
	nats := natstest.StartWith(t, func(o *server.Options) { o.Username, o.Password = "fp", password })
	u := strings.Replace(nats.URL(), "nats://", "nats://fp:"+password+"@", 1)
	s := startHTTP(t, 0, "NATS_URL="+u, clusterKeysEnv, "LOG_LEVEL=debug")
	report := s.joined(t)
	raw, _ := json.Marshal(report)
	for what, text := range map[string]string{"/healthz": string(raw), "the log": s.Output()} {
		if strings.Contains(text, password) {
			t.Errorf("%s shows the NATS password:\n%s", what, text)
		}
	}
}

// What the replica logs when its NATS link comes up and when it drops
// (internal/cluster). Each line is written while the change is made,
// under the lock /healthz reads the link with: whoever sees the line finds
// the change in /healthz, and whoever sees the change finds the line.
const (
	logJoined   = "joined the cluster"
	logLinkLost = "lost the NATS link"
)

// joined returns the /healthz report once it shows the replica connected
// to NATS: at once when it joined before listening, or when it logs that
// it joined.
func (s *httpServer) joined(t *testing.T) map[string]any {
	t.Helper()
	up := s.expect(logJoined)
	report := s.health(t)
	if c, _ := report["cluster"].(map[string]any); c["connected"] == true {
		return report
	}
	s.await(t, up, "the replica to join the cluster")
	report = s.health(t)
	if c, _ := report["cluster"].(map[string]any); c["connected"] != true {
		t.Fatalf("the replica logged that it joined, but /healthz says otherwise: %v\n%s", report, s.Output())
	}
	return report
}

// await waits for a line the server was expected to log (tail.expect).
func (s *httpServer) await(t *testing.T, logged <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-logged:
	case <-s.Exited():
		t.Fatalf("the server exited (%v) waiting for %s; its output ends:\n%s", s.ExitErr(), what, s.Output())
	case <-time.After(15 * time.Second):
		t.Fatalf("timed out waiting for %s; the server's output ends:\n%s", what, s.Output())
	}
}

// TestBinaryHealthzListsConflicts: a name two --source libraries define is
// listed in /healthz with the sources in precedence order, and each source
// is listed under its namespace.
func TestBinaryHealthzListsConflicts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good, err := os.ReadFile(filepath.Join("..", "..", "templates", "examples", "Bug_Triage.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Bug_Triage.json"), good, 0o644); err != nil {
		t.Fatal(err)
	}
	s := startHTTP(t, 0, "FLOWYPROMPT_SOURCES=name=mine,dir="+dir+";name=examples,examples")
	report := s.health(t)
	want := []any{map[string]any{"name": "Bug_Triage", "namespaces": []any{"mine", "examples"}}}
	if diff := cmp.Diff(want, report["conflicts"]); diff != "" {
		t.Errorf("conflicts (-want +got):\n%s", diff)
	}
	src, _ := report["source"].(map[string]any)
	members, _ := src["members"].([]any)
	var got []string
	for _, m := range members {
		mm, _ := m.(map[string]any)
		got = append(got, mm["namespace"].(string)+":"+mm["kind"].(string))
	}
	if diff := cmp.Diff([]string{"mine:directory", "examples:embedded"}, got); diff != "" {
		t.Errorf("source members (-want +got):\n%s", diff)
	}
	if report["templates"] != float64(18) {
		t.Errorf("templates %v, want 18 (17 examples and the folder's one)", report["templates"])
	}
}

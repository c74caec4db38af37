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

// TestBinaryHealthzListsInvalidFiles: /healthz names each file left out of
// the library with its error code, not only how many there are.
func TestBinaryHealthzListsInvalidFiles(t *testing.T) {
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
	s := startHTTP(t, 0, "TEMPLATES_DIR="+dir)
	report := s.health(t)
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
}

// TestBinaryHealthzShowsTheCluster: with --nats the report names this
// replica and the link's state; while NATS is down the replica keeps
// serving and says it is degraded, and it rejoins when NATS is back.
func TestBinaryHealthzShowsTheCluster(t *testing.T) {
	nats := natstest.Start(t)
	s := startHTTP(t, 0, "NATS_URL="+nats.URL(), "FLOWYPROMPT_REPLICA_ID=r1")
	cluster := func(report map[string]any) map[string]any {
		c, ok := report["cluster"].(map[string]any)
		if !ok {
			t.Fatalf("/healthz has no cluster section: %v", report)
		}
		return c
	}
	waitHealth := func(what string, ok func(map[string]any) bool) map[string]any {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			report := s.health(t)
			if ok(report) {
				return report
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; last report: %v", what, report)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	report := waitHealth("the replica to join", func(r map[string]any) bool { return cluster(r)["connected"] == true })
	if c := cluster(report); c["replica"] != "r1" || report["status"] != "ok" {
		t.Errorf("status %v, cluster %v; want ok and replica r1", report["status"], c)
	}
	nats.Stop()
	report = waitHealth("the link to drop", func(r map[string]any) bool { return cluster(r)["connected"] == false })
	if report["status"] != "degraded" || report["templates"] == float64(0) {
		t.Errorf("without NATS: status %v, templates %v; want degraded and still serving", report["status"], report["templates"])
	}
	nats.Restart()
	waitHealth("the replica to rejoin", func(r map[string]any) bool {
		return cluster(r)["connected"] == true && r["status"] == "ok"
	})
}

// TestBinaryNATSPasswordStaysSecret: a password in the NATS URL reaches the
// server but never the log or /healthz.
func TestBinaryNATSPasswordStaysSecret(t *testing.T) {
	const password = "n4ts-s3cret-pw"
	nats := natstest.StartWith(t, func(o *server.Options) { o.Username, o.Password = "fp", password })
	u := strings.Replace(nats.URL(), "nats://", "nats://fp:"+password+"@", 1)
	s := startHTTP(t, 0, "NATS_URL="+u, "LOG_LEVEL=debug")
	deadline := time.Now().Add(15 * time.Second)
	var report map[string]any
	for {
		report = s.health(t)
		if c, _ := report["cluster"].(map[string]any); c["connected"] == true {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never joined with the URL's credentials: %v\n%s", report, s.Output())
		}
		time.Sleep(50 * time.Millisecond)
	}
	raw, _ := json.Marshal(report)
	for what, text := range map[string]string{"/healthz": string(raw), "the log": s.Output()} {
		if strings.Contains(text, password) {
			t.Errorf("%s shows the NATS password:\n%s", what, text)
		}
	}
}

// TestBinaryHealthzListsConflicts: a name two --source libraries define is
// listed in /healthz with the sources in precedence order, and each source
// is listed under its namespace.
func TestBinaryHealthzListsConflicts(t *testing.T) {
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
	if report["templates"] != float64(14) {
		t.Errorf("templates %v, want 14 (13 examples and the folder's one)", report["templates"])
	}
}

package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/cluster"
	"github.com/flowyprompt/flowyprompt/internal/config"
	"github.com/flowyprompt/flowyprompt/internal/fakegithub"
	"github.com/flowyprompt/flowyprompt/internal/natstest"
	"github.com/flowyprompt/flowyprompt/templates"
)

// TestHealthzSharedCatalog: with --nats, the GitHub source shares its
// catalog through the cluster, and /healthz says which commit it serves
// and which replica revalidated GitHub last.
func TestHealthzSharedCatalog(t *testing.T) {
	fake := fakegithub.New("acme", "prompts")
	t.Cleanup(fake.Close)
	fake.SetToken(cliToken)
	fake.PutFile("templates/Hello.json", fakegithub.ValidTemplate("Hello", "Hello {{subject}}"))
	srv := natstest.Start(t)
	log := slog.New(slog.DiscardHandler)
	node, err := cluster.Join(cluster.Options{URL: srv.URL(), Replica: "r1", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(node.Close)
	for deadline := time.Now().Add(10 * time.Second); !node.Connected(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("node never connected")
		}
	}
	cfg := config.Config{GitHubRepoURL: fake.RepoURL(), GitHubAPIURL: fake.URL(), GitHubToken: cliToken, CacheDir: t.TempDir()}
	src, err := openSource(&cfg, log, node)
	if err != nil {
		t.Fatal(err)
	}
	lib := templates.NewLibrary(src, log)
	if err := lib.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(catalogStatus(lib, node, src)())
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Status  string `json:"status"`
		Cluster struct {
			Replica   string `json:"replica"`
			Connected bool   `json:"connected"`
			Catalog   struct {
				Commit    string `json:"commit"`
				CheckedBy string `json:"checked_by"`
				Alone     bool   `json:"alone"`
			} `json:"catalog"`
		} `json:"cluster"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	c := got.Cluster
	if got.Status != "ok" || c.Replica != "r1" || !c.Connected || c.Catalog.Commit != fake.Head() || c.Catalog.CheckedBy != "r1" || c.Catalog.Alone {
		t.Errorf("/healthz = %s; want status ok, replica r1 connected, catalog at %s checked by r1", raw, fake.Head())
	}
}

//go:build !desktop

package main

import (
	"bytes"
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
	raw := healthOnCluster(t, config.Config{GitHubRepoURL: fake.RepoURL(), GitHubAPIURL: fake.URL(), GitHubToken: cliToken, CacheDir: t.TempDir()})
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

// TestHealthzSharedCatalogs: with --nats and several --source
// repositories, each is shared through the cluster on its own, and
// /healthz shows each one's commit under its namespace.
func TestHealthzSharedCatalogs(t *testing.T) {
	var fakes []*fakegithub.Server
	var specs []config.SourceSpec
	for _, owner := range []string{"acme", "ops"} {
		fake := fakegithub.New(owner, "prompts")
		t.Cleanup(fake.Close)
		fake.SetToken(cliToken)
		fake.PutFile("templates/Hello.json", fakegithub.ValidTemplate("Hello", owner+" {{subject}}"))
		fakes = append(fakes, fake)
		specs = append(specs, config.SourceSpec{Name: owner, Kind: config.KindGitHub, Location: fake.RepoURL(), APIURL: fake.URL(), Token: cliToken})
	}
	raw := healthOnCluster(t, config.Config{Sources: specs, CacheDir: t.TempDir(), GitHubPath: "templates"})
	var got struct {
		Conflicts []templates.Conflict `json:"conflicts"`
		Cluster   struct {
			Catalogs map[string]struct {
				Commit    string `json:"commit"`
				CheckedBy string `json:"checked_by"`
			} `json:"catalogs"`
		} `json:"cluster"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	for i, ns := range []string{"acme", "ops"} {
		if c := got.Cluster.Catalogs[ns]; c.Commit != fakes[i].Head() || c.CheckedBy != "r1" {
			t.Errorf("/healthz cluster.catalogs[%s] = %+v, want commit %s checked by r1:\n%s", ns, c, fakes[i].Head(), raw)
		}
	}
	if len(got.Conflicts) != 1 || got.Conflicts[0].Name != "Hello" {
		t.Errorf("conflicts = %+v, want Hello", got.Conflicts)
	}
}

// healthOnCluster opens cfg's source as replica r1 of a cluster on an
// embedded NATS server, loads it, and returns the /healthz report as JSON.
func healthOnCluster(t *testing.T, cfg config.Config) []byte {
	t.Helper()
	srv := natstest.Start(t)
	log := slog.New(slog.DiscardHandler)
	node, err := cluster.Join(cluster.Options{URL: srv.URL(), Replica: "r1", Logger: log, Keys: [][]byte{bytes.Repeat([]byte{3}, 32)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(node.Close)
	// The link comes up on the client's own goroutine: wait for the node to
	// say so. Registering first and then looking loses no notification.
	up := make(chan struct{}, 1)
	cancel := node.OnReconnect(func() { up <- struct{}{} })
	defer cancel()
	if !node.Connected() {
		select {
		case <-up:
		case <-time.After(10 * time.Second):
			t.Fatal("node never connected")
		}
	}
	link := natsReplicas{node: node}
	src, err := openSource(&cfg, log, link)
	if err != nil {
		t.Fatal(err)
	}
	lib := templates.NewLibrary(src, log)
	if err := lib.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(catalogStatus(lib, nil, link, src, nil)(context.Background(), true))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

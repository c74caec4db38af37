//go:build !desktop

package main

import (
	"log/slog"

	"github.com/flowyprompt/flowyprompt/github"
	"github.com/flowyprompt/flowyprompt/internal/cluster"
	"github.com/flowyprompt/flowyprompt/internal/config"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/flowyprompt/flowyprompt/transport/httpserver"
)

// joinReplicas joins the other replicas through the NATS server of
// --nats.
func joinReplicas(cfg *config.Config, log *slog.Logger) (replicas, error) {
	node, err := cluster.Join(cluster.Options{URL: cfg.NATSURL, Creds: cfg.NATSCreds, CA: cfg.NATSCA,
		Cert: cfg.NATSCert, Key: cfg.NATSKey, Replica: cfg.Replica, Logger: log})
	if err != nil {
		return nil, err
	}
	return natsReplicas{node}, nil
}

// natsReplicas is the link through internal/cluster.
type natsReplicas struct{ node *cluster.Node }

var _ replicas = natsReplicas{}

func (r natsReplicas) shared() (github.Shared, string) {
	return cluster.NewCatalog(r.node), r.node.ID()
}

func (r natsReplicas) router(log *slog.Logger, maxBody int) (httpserver.SessionRouter, func(), error) {
	rt, err := cluster.NewRouter(r.node, cluster.RouterOptions{Logger: log, MaxBodyBytes: maxBody})
	if err != nil {
		return nil, nil, err
	}
	return rt, rt.Close, nil
}

func (r natsReplicas) close() { r.node.Close() }

func (r natsReplicas) health(src templates.Source, detail bool) (any, bool) {
	h := r.node.Health()
	if !detail {
		// The server's address and the link's last error are for the
		// operator.
		return map[string]any{"replica": h.Replica, "connected": h.Connected, "since": h.Since, "replicas": h.Replicas}, h.Connected
	}
	cs := clusterStatus{Health: h}
	if gs, ok := src.(sharer); ok {
		if shared, ok := gs.SharedStatus(); ok {
			cs.Catalog = &shared
		}
	}
	if comp, ok := src.(*templates.Composite); ok {
		for _, m := range comp.Members() {
			if gs, ok := m.Source.(sharer); ok {
				if shared, ok := gs.SharedStatus(); ok {
					if cs.Catalogs == nil {
						cs.Catalogs = map[string]github.SharedStatus{}
					}
					cs.Catalogs[m.Namespace] = shared
				}
			}
		}
	}
	return cs, h.Connected
}

// clusterStatus is /healthz's "cluster": the link and, for a GitHub
// source, the shared catalog (its commit, who revalidated GitHub last and
// when), so an operator sees that the replicas serve the same commit.
type clusterStatus struct {
	cluster.Health
	Catalog *github.SharedStatus `json:"catalog,omitempty"`
	// Catalogs are the shared catalogs of the GitHub sources of --source,
	// by namespace: each repository is shared on its own.
	Catalogs map[string]github.SharedStatus `json:"catalogs,omitempty"`
}

// sharer is a source whose catalog the cluster shares (github.Source).
type sharer interface {
	SharedStatus() (github.SharedStatus, bool)
}

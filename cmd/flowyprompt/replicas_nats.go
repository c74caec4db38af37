//go:build !desktop

package main

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/flowyprompt/flowyprompt/github"
	"github.com/flowyprompt/flowyprompt/internal/cluster"
	"github.com/flowyprompt/flowyprompt/internal/config"
	"github.com/flowyprompt/flowyprompt/internal/seal"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/flowyprompt/flowyprompt/transport/httpserver"
)

// joinReplicas joins the other replicas through the NATS server of
// --nats. The replicas sign what they send each other with keys derived
// from the state keys, so those are required: a random key per process
// would refuse every other replica's messages.
func joinReplicas(cfg *config.Config, log *slog.Logger) (replicas, error) {
	if cfg.StateKeys == "" {
		return nil, errors.New("--nats needs the state keys (FLOWYPROMPT_STATE_KEYS, or --state-keys): the replicas sign every message " +
			"they send each other with keys derived from them, and refuse any other; give every replica the same " +
			"(make one with: openssl rand -base64 32)")
	}
	keys, err := seal.ParseKeys(cfg.StateKeys)
	if err != nil {
		return nil, fmt.Errorf("--state-keys / FLOWYPROMPT_STATE_KEYS: %w", err)
	}
	for _, l := range []struct {
		flag string
		v    int
	}{{"--max-forwarded", cfg.MaxForwarded}, {"--max-forwarded-per-session", cfg.MaxForwardedPerSession},
		{"--max-forwarded-per-client", cfg.MaxForwardedPerClient}} {
		if l.v < 1 {
			return nil, fmt.Errorf("%s must be at least 1 (got %d): it bounds the requests other replicas forward here at once", l.flag, l.v)
		}
	}
	node, err := cluster.Join(cluster.Options{URL: cfg.NATSURL, Creds: cfg.NATSCreds, CA: cfg.NATSCA,
		Cert: cfg.NATSCert, Key: cfg.NATSKey, Replica: cfg.Replica, Logger: log, Keys: keys})
	if err != nil {
		return nil, err
	}
	return natsReplicas{node: node, limits: cluster.RouterOptions{MaxExchanges: cfg.MaxForwarded,
		MaxExchangesPerSession: cfg.MaxForwardedPerSession, MaxExchangesPerClient: cfg.MaxForwardedPerClient}}, nil
}

// natsReplicas is the link through internal/cluster.
type natsReplicas struct {
	node   *cluster.Node
	limits cluster.RouterOptions // the forwarding bounds; the rest is router's
}

var _ replicas = natsReplicas{}

func (r natsReplicas) shared() (github.Shared, string) {
	return cluster.NewCatalog(r.node), r.node.ID()
}

func (r natsReplicas) router(log *slog.Logger, maxBody int) (httpserver.SessionRouter, func(), error) {
	opts := r.limits
	opts.Logger, opts.MaxBodyBytes = log, maxBody
	// A client is counted as the transports count it: behind
	// --trusted-proxies by its own address, with a token by the token.
	opts.ClientKey = httpserver.ClientKey
	rt, err := cluster.NewRouter(r.node, opts)
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
		// operator; the refused messages are counts, which anyone may see.
		return map[string]any{"replica": h.Replica, "connected": h.Connected, "since": h.Since, "replicas": h.Replicas,
			"refused_messages": h.Refused}, h.Connected
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

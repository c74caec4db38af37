//go:build desktop

package main

import (
	"log/slog"

	"github.com/flowyprompt/flowyprompt/internal/config"
	"github.com/flowyprompt/flowyprompt/internal/edition"
)

// joinReplicas refuses: the desktop build has no NATS client.
func joinReplicas(*config.Config, *slog.Logger) (replicas, error) {
	return nil, edition.LeftOut("--nats (NATS_URL)", "cluster support", "replicas")
}

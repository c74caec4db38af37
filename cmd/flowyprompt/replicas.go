package main

import (
	"log/slog"

	"github.com/flowyprompt/flowyprompt/github"
	"github.com/flowyprompt/flowyprompt/templates"
	"github.com/flowyprompt/flowyprompt/transport/httpserver"
)

// replicas is serve's link to the other replicas of a cluster (serve
// --nats). It is an interface, made by joinReplicas, so that the desktop
// build (package edition) links no NATS client: replicas_nats.go builds
// it on internal/cluster, and in the desktop build replicas_desktop.go
// refuses --nats at start.
type replicas interface {
	// shared is the store through which the replicas' GitHub sources
	// share one catalog, and this replica's name in it.
	shared() (github.Shared, string)
	// router forwards the requests of 2025-era sessions held by another
	// replica, with bodies of at most maxBody bytes (the body cap this
	// replica reads them with); stop closes it.
	router(log *slog.Logger, maxBody int) (r httpserver.SessionRouter, stop func(), err error)
	// health is /healthz's "cluster" (the link and the shared catalogs
	// of src; without detail, the link and the replicas only), and
	// whether the link is up.
	health(src templates.Source, detail bool) (status any, connected bool)
	// close leaves the cluster.
	close()
}

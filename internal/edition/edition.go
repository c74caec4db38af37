// Package edition says which build of flowyprompt this binary is: the
// full one, or the desktop build that Claude Desktop's bundle ships
// (go build -tags desktop).
//
// Claude Desktop runs one server over stdio for one user. The team-server
// features, replicas joined over NATS and telemetry exported with
// OpenTelemetry or served to Prometheus, are for HTTP deployments; their
// libraries (the NATS client, the OpenTelemetry SDK and exporters, the
// Prometheus client, protobuf) were more than a third of every platform's
// binary, and the bundle carries five of them. The desktop build leaves
// them out, behind //go:build desktop / !desktop pairs of small files in
// internal/telemetry and cmd/flowyprompt; asking it for one of them is an
// error made here, so that every refusal says the same what, why and how.
package edition

import "fmt"

// FullBinary is how to get the build that has everything.
const FullBinary = "the full binary: make install, or a release archive"

// LeftOut is the error for a setting that asks the desktop build for a
// feature it leaves out: setting names what was asked ("--nats
// (NATS_URL)"), feature what is missing ("cluster support"), who what
// needs it ("replicas").
func LeftOut(setting, feature, who string) error {
	return fmt.Errorf("%s: this is the Claude Desktop bundle's build, which has no %s; %s run %s", setting, feature, who, FullBinary)
}

package edition

import "testing"

// TestLeftOut: a refusal names the setting, what the desktop build lacks,
// and where to get it.
func TestLeftOut(t *testing.T) {
	got := LeftOut("--nats (NATS_URL)", "cluster support", "replicas").Error()
	want := "--nats (NATS_URL): this is the Claude Desktop bundle's build, which has no cluster support; " +
		"replicas run the full binary: make install, or a release archive"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

package streamable

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestIdleBacklogAfterStreamCloses: messages left behind by a GET stream
// whose client stopped reading are cut to the idle backlog once the stream
// is gone, keeping the newest, instead of being held (and replayed to the
// next GET) by the thousand.
func TestIdleBacklogAfterStreamCloses(t *testing.T) {
	for _, tc := range []struct {
		name     string
		whileGet int // queued while a GET stream was open and not read
		idle     int // sent after it closed
	}{
		{"none left behind", 0, idleBacklog + 3},
		{"fewer than the backlog", idleBacklog / 2, 1},
		{"many left behind", 1000, 1},
		{"many left behind, more after", 1000, idleBacklog + 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ss := &session{id: "s", wake: make(chan struct{}, 1)}
			n := 0
			send := func() {
				if err := ss.unsolicited([]byte(strconv.Itoa(n))); err != nil {
					t.Fatal(err)
				}
				n++
			}
			ss.getOpen = true
			for range tc.whileGet {
				send()
			}
			ss.getOpen = false
			for range tc.idle {
				send()
			}
			var want []string
			for i := max(0, n-idleBacklog); i < n; i++ {
				want = append(want, strconv.Itoa(i))
			}
			var got []string
			for _, b := range ss.take() {
				got = append(got, string(b))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("queue (-want +got):\n%s", diff)
			}
		})
	}
}

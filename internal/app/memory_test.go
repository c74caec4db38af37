package app

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestMemoryBounds: completion memory keeps a value per variable most
// recent first, up to maxRemembered; leaves out a value over the length
// cap; and past a session's or all sessions' bytes drops the oldest
// values first, whoever used them.
func TestMemoryBounds(t *testing.T) {
	t.Parallel()
	size := func(session, value string) int {
		return len(session) + len("T") + len("v") + len(value) + memoryOverhead
	}
	type use struct{ session, value string }
	tests := []struct {
		name                     string
		maxValue, maxSess, total int
		uses                     []use
		want                     map[string][]string // session → recall(session, T, v)
	}{
		{"most recent first, a repeat moved to the front", 0, 0, 0,
			[]use{{"a", "one"}, {"a", "two"}, {"a", "one"}}, map[string][]string{"a": {"one", "two"}}},
		{"a value over the length cap is not kept", 8, 0, 0,
			[]use{{"a", "short"}, {"a", "much too long"}}, map[string][]string{"a": {"short"}}},
		{"a session past its bytes drops its oldest", 0, 2 * size("a", "v1"), 0,
			[]use{{"a", "v1"}, {"a", "v2"}, {"a", "v3"}, {"b", "w1"}}, map[string][]string{"a": {"v3", "v2"}, "b": {"w1"}}},
		{"all sessions past the total drop the oldest of any", 0, 0, 3 * size("a", "v1"),
			[]use{{"a", "v1"}, {"b", "w1"}, {"a", "v2"}, {"c", "x1"}}, map[string][]string{"a": {"v2"}, "b": {"w1"}, "c": {"x1"}}},
		{"a session's only value dropped ends its memory", 0, 0, size("a", "v1"),
			[]use{{"a", "v1"}, {"b", "w1"}}, map[string][]string{"a": nil, "b": {"w1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &memory{maxValue: tt.maxValue, maxSession: tt.maxSess, maxTotal: tt.total}
			for _, u := range tt.uses {
				m.remember(u.session, "T", "v", u.value)
			}
			held := 0
			for s, want := range tt.want {
				got := m.recall(s, "T", "v")
				if !slices.Equal(got, want) {
					t.Errorf("recall(%s) = %q, want %q", s, got, want)
				}
				for _, v := range got {
					held += size(s, v)
				}
			}
			if m.held() != held {
				t.Errorf("held %d bytes, want %d", m.held(), held)
			}
		})
	}

	// Per variable: the newest maxRemembered.
	var m memory
	for i := range maxRemembered + 5 {
		m.remember("a", "T", "v", fmt.Sprint(i))
	}
	if got := m.recall("a", "T", "v"); len(got) != maxRemembered || got[0] != fmt.Sprint(maxRemembered+4) {
		t.Errorf("recall = %q, want the newest %d", got, maxRemembered)
	}
	m.forget("a")
	if m.held() != 0 || m.recall("a", "T", "v") != nil {
		t.Errorf("after forget: %d bytes held, %q", m.held(), m.recall("a", "T", "v"))
	}
}

// TestMemoryDefaults: at the defaults, 300 sessions each sending values
// of the largest size a render allows hold at most maxTotalMemory, and
// each session at most maxSessionMemory.
func TestMemoryDefaults(t *testing.T) {
	t.Parallel()
	var m memory
	big := strings.Repeat("x", 10_000)
	kept := strings.Repeat("y", maxMemoryValue)
	for s := range 300 {
		session := fmt.Sprintf("session-%03d", s)
		for i := range 200 {
			m.remember(session, "T", fmt.Sprintf("v%d", i%50), big) // never kept
			m.remember(session, "T", fmt.Sprintf("v%d", i%50), fmt.Sprintf("%d%s", i, kept[:maxMemoryValue-4]))
		}
	}
	if h := m.held(); h > maxTotalMemory || h < maxTotalMemory-2*maxMemoryValue-2*memoryOverhead {
		t.Errorf("held %d bytes, want at most (and about) %d", h, maxTotalMemory)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for s, sm := range m.bySession {
		if sm.bytes > maxSessionMemory {
			t.Errorf("session %s holds %d bytes, over %d", s, sm.bytes, maxSessionMemory)
		}
	}
}

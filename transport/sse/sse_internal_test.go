package sse

import (
	"net/url"
	"testing"
)

// TestQueryValue holds the fast query lookup to url.Values.Get.
func TestQueryValue(t *testing.T) {
	for _, raw := range []string{
		"session_id=abc", "x=1&session_id=abc&y=2", "session_id=", "session_id", "", "session_idx=1",
		"session_id=a&session_id=b", "session_id=a%20b", "session_id=a+b", "token=t;session_id=c", "=x&session_id=d",
	} {
		want, _ := url.ParseQuery(raw)
		if got := queryValue(raw, "session_id"); got != want.Get("session_id") {
			t.Errorf("queryValue(%q) = %q, want %q", raw, got, want.Get("session_id"))
		}
	}
}

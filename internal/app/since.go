package app

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/templates"
)

// sinceFormat names the forms updated_since takes, for errors.
const sinceFormat = `a duration back from now ("7d", "72h", "2w") or a date or time ("2026-11-01", "2026-11-01T09:00:00Z")`

// parseSince reads an updated_since value: a whole number of hours, days
// or weeks back from now, or a date (midnight UTC) or RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	bad := func(why string) error {
		return &fault.Error{Code: fault.InvalidArgument, What: fmt.Sprintf("updated_since %q is not understood", s), Why: why,
			How: "pass " + sinceFormat + `, e.g. updated_since="7d"`}
	}
	if n := len(s); n >= 2 && strings.ContainsRune("hdw", rune(s[n-1])) {
		v, err := strconv.Atoi(s[:n-1])
		if err != nil || v <= 0 || v > 100_000 {
			return time.Time{}, bad("a duration is a whole number from 1 followed by h, d or w")
		}
		unit := map[byte]time.Duration{'h': time.Hour, 'd': 24 * time.Hour, 'w': 7 * 24 * time.Hour}[s[n-1]]
		return now.Add(-time.Duration(v) * unit), nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, bad("it is neither a duration nor a valid date or time")
}

// lastUpdated is a template's metadata.lastUpdated as a time; ok is false
// when it has none (such a template is left out by updated_since).
func lastUpdated(t *templates.Template) (time.Time, bool) {
	s := t.Metadata.LastUpdated
	if ts, err := time.Parse(time.RFC3339, s); err == nil {
		return ts, true
	}
	if ts, err := time.Parse(time.DateOnly, s); err == nil {
		return ts, true
	}
	return time.Time{}, false
}

// updatedSince reports whether t was updated at or after since (a zero
// since keeps every template).
func updatedSince(t *templates.Template, since time.Time) bool {
	if since.IsZero() {
		return true
	}
	ts, ok := lastUpdated(t)
	return ok && !ts.Before(since)
}

package suggest

import (
	"slices"
	"testing"
)

func TestDistance(t *testing.T) {
	tests := []struct {
		a, b  string
		limit int
		want  int
	}{
		{"style", "style", 5, 0},
		{"styel", "style", 5, 1}, // a swap counts once
		{"comit", "commit", 5, 1},
		{"kitten", "sitting", 5, 3},
		{"회의록", "회의", 5, 1},    // runes, not bytes
		{"a", "abcdef", 3, 3},  // the lengths alone reach the limit
		{"abcd", "wxyz", 2, 2}, // clamped to the limit
	}
	for _, tc := range tests {
		if got := Distance(tc.a, tc.b, tc.limit); got != tc.want {
			t.Errorf("Distance(%q, %q, %d) = %d, want %d", tc.a, tc.b, tc.limit, got, tc.want)
		}
	}
}

func TestClose(t *testing.T) {
	vocab := []string{"Engineering", "Marketing", "commit", "message", "style", "git", "STYLE"}
	tests := []struct {
		q    string
		n    int
		want []string
	}{
		{"Engg", 3, []string{"Engineering"}}, // a shortening
		{"comit", 1, []string{"commit"}},
		{"styel", 3, []string{"style"}}, // one suggestion per word, whatever its case
		{"style", 3, []string{}},        // the word itself is no suggestion
		{"zzzz", 3, []string{}},
		{"", 3, []string{}},
	}
	for _, tc := range tests {
		if got := Close(tc.q, vocab, tc.n); !slices.Equal(got, tc.want) {
			t.Errorf("Close(%q) = %q, want %q", tc.q, got, tc.want)
		}
	}
}

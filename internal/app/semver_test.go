package app

import "testing"

func TestCompareSemver(t *testing.T) {
	t.Parallel()
	tests := []struct {
		x, y string
		want int
	}{
		{"1.0.0-rc.9", "1.0.0-rc.10", -1},
		{"1.0.0-rc.10", "1.0.0-rc.9", 1},
		{"1.0.0-rc.1", "1.0.0", -1},
		{"1.0.0-alpha", "1.0.0-alpha.1", -1},
		{"1.0.0-alpha.beta", "1.0.0-beta", -1},
		{"1.0.0-2", "1.0.0-10", -1},
		{"1.0.0-alpha", "1.0.0-1", 1}, // alphanumeric above numeric
		{"1.2.3", "1.2.3+build.5", 0},
		{"1.10.0", "1.9.0", 1},
		{"2.0.0", "10.0.0", -1},
		{"1.0.0", "1.0.0", 0},
	}
	for _, tt := range tests {
		if got := compareSemver(tt.x, tt.y); got != tt.want {
			t.Errorf("compareSemver(%q, %q) = %d, want %d", tt.x, tt.y, got, tt.want)
		}
	}
}

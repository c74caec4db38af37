package app

import (
	"strconv"
	"strings"

	"golang.org/x/mod/semver"
)

// compareSemver compares two template versions, "X.Y.Z[-pre][+build]"
// as templates validate them, by semantic versioning's precedence
// (pre-release identifiers numerically where numeric: rc.9 < rc.10).
// golang.org/x/mod/semver wants a leading "v".
func compareSemver(x, y string) int {
	return semver.Compare("v"+x, "v"+y)
}

// bumpPatch is v with its patch number raised ("1.0.0": "1.0.1").
func bumpPatch(v string) string {
	v, _, _ = strings.Cut(v, "+")
	v, _, _ = strings.Cut(v, "-")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) != 3 {
		return v
	}
	n, _ := strconv.Atoi(parts[2])
	return parts[0] + "." + parts[1] + "." + strconv.Itoa(n+1)
}

package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// semverRE is the regular expression semver.org publishes for a valid
// version (without the leading v).
var semverRE = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
	`(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

var (
	describeRE = regexp.MustCompile(`^(.+)-(\d+)-g([0-9a-f]{4,40})$`)
	hashRE     = regexp.MustCompile(`^[0-9a-f]{4,40}$`)
)

// semver turns what `git describe --tags --always --dirty` prints into a
// valid semantic version, which a bundle's manifest needs (hosts compare
// versions to offer updates):
//
//	v0.3.0                 0.3.0
//	v0.3.0-5-gabc1234      0.3.1-dev.5+gabc1234   after v0.3.0, before v0.3.1
//	v0.4.0-rc.1-2-gabc1234 0.4.0-rc.1.dev.2+gabc1234
//	abc1234 (no tag)       0.0.0-dev+gabc1234
//	any of them -dirty     the same with build metadata "dirty"
func semver(describe string) (string, error) {
	d, dirty := strings.CutSuffix(strings.TrimSpace(describe), "-dirty")
	var meta []string
	var out string
	switch {
	case d == "dev":
		// The Makefile's answer without git.
		out = "0.0.0-dev"
	case hashRE.MatchString(d):
		out = "0.0.0-dev"
		meta = append(meta, "g"+d)
	default:
		tag, commits, hash := strings.TrimPrefix(d, "v"), "", ""
		if m := describeRE.FindStringSubmatch(d); m != nil {
			tag, commits, hash = strings.TrimPrefix(m[1], "v"), m[2], m[3]
		}
		m := semverRE.FindStringSubmatch(tag)
		if m == nil {
			return "", fmt.Errorf("version %q: the tag %q is not a semantic version such as v1.2.3", describe, tag)
		}
		if m[5] != "" {
			meta = append(meta, m[5])
		}
		switch {
		case commits == "":
			out = strings.SplitN(tag, "+", 2)[0]
		case m[4] == "":
			// A prerelease of the next patch sorts after the tag and
			// before the next release.
			patch, err := strconv.Atoi(m[3])
			if err != nil {
				return "", fmt.Errorf("version %q: patch %q: %w", describe, m[3], err)
			}
			out = fmt.Sprintf("%s.%s.%d-dev.%s", m[1], m[2], patch+1, commits)
			meta = append(meta, "g"+hash)
		default:
			out = fmt.Sprintf("%s.%s.%s-%s.dev.%s", m[1], m[2], m[3], m[4], commits)
			meta = append(meta, "g"+hash)
		}
	}
	if dirty {
		meta = append(meta, "dirty")
	}
	if len(meta) > 0 {
		out += "+" + strings.Join(meta, ".")
	}
	if !semverRE.MatchString(out) {
		return "", fmt.Errorf("version %q gave %q, which is not a semantic version", describe, out)
	}
	return out, nil
}

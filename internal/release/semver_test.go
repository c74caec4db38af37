package main

import "testing"

func TestSemver(t *testing.T) {
	for in, want := range map[string]string{
		"v0.3.0":                  "0.3.0",
		"0.3.0":                   "0.3.0",
		"v0.3.0-dirty":            "0.3.0+dirty",
		"v0.3.0-5-gabc1234":       "0.3.1-dev.5+gabc1234",
		"v0.3.0-5-gabc1234-dirty": "0.3.1-dev.5+gabc1234.dirty",
		"v1.9.9-12-g0123456789ab": "1.9.10-dev.12+g0123456789ab",
		"v0.4.0-rc.1":             "0.4.0-rc.1",
		"v0.4.0-rc.1-2-gabc1234":  "0.4.0-rc.1.dev.2+gabc1234",
		"v2.0.0+build.7":          "2.0.0+build.7",
		"901cb6d":                 "0.0.0-dev+g901cb6d",
		"901cb6d-dirty":           "0.0.0-dev+g901cb6d.dirty",
		"dev":                     "0.0.0-dev",
		"v9.9.9-test":             "9.9.9-test",
		" v0.3.0\n":               "0.3.0",
	} {
		got, err := semver(in)
		if err != nil || got != want {
			t.Errorf("semver(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "release-7", "v1.2", "v01.2.3", "nightly-3-gabc1234"} {
		if got, err := semver(in); err == nil {
			t.Errorf("semver(%q) = %q, want an error", in, got)
		}
	}
}

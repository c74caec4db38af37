package templates

import (
	"path"
	"strings"
)

// IsLibraryFile reports whether the file at p (slash-separated, within its
// source) is one a library reads into its catalog: a template or a flow.
// It is the one place that decides which files a source loads, so the
// folder, GitHub and embedded sources and Build agree on it.
func IsLibraryFile(p string) bool {
	base := path.Base(p)
	return strings.HasSuffix(base, ".json") && !strings.HasPrefix(base, ".")
}

package templates

import (
	"path"
	"strings"
)

// IsLibraryFile reports whether the file at p (slash-separated, within its
// source) is one a library reads into its catalog: a template in our JSON
// or in one of the formats teams already keep (NAME.prompt.yml,
// NAME.prompt.yaml, NAME.prompt, NAME.prompty), a flow, or a partial
// (PartialName). It is the one place that decides which files a source
// loads, so the folder, GitHub and embedded sources and Build agree on it.
func IsLibraryFile(p string) bool {
	base := path.Base(p)
	if strings.HasPrefix(base, ".") {
		return false
	}
	if _, ok := PartialName(p); ok {
		return true
	}
	format, _ := FormatOf(base)
	return format != ""
}

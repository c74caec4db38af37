package templates

import (
	"errors"
	"path"
	"strings"
)

// Why RelPath refuses a path. Callers match them with errors.Is to word the
// refusal for their context (a template's resources list, a resource read,
// a configured folder, a file to commit).
var (
	// ErrPathEmpty: the path names no file ("", ".", "docs/..").
	ErrPathEmpty = errors.New("the path names no file")
	// ErrPathOutside: the path is absolute or leads out of its folder.
	ErrPathOutside = errors.New("the path is absolute or leads out of its folder")
	// ErrPathHidden: the path goes through a hidden file or folder.
	ErrPathHidden = errors.New("the path goes through a hidden file or folder")
)

// RelPath cleans p, a path relative to a template folder, and refuses what
// no source may serve: an empty path, an absolute one, one that leads out
// of the folder with "..", and one that goes through a hidden file or
// folder (.git, .env). Both '/' and '\' separate segments, so that
// "..\secret" is refused on every system and a folder source and a GitHub
// source accept the same paths. It returns the clean slash path.
//
// The error wraps ErrPathEmpty, ErrPathOutside or ErrPathHidden. With
// ErrPathHidden alone the returned path is still the clean one, for callers
// to whom a hidden folder is acceptable (a configured folder such as
// .github/prompts, a file committed inside it).
func RelPath(p string) (string, error) {
	slash := strings.ReplaceAll(p, `\`, "/")
	// Cleaning first would turn "/.." into "/" and "a/../.." into "..":
	// absoluteness is judged on the path as given.
	if path.IsAbs(slash) {
		return "", ErrPathOutside
	}
	clean := path.Clean(slash)
	switch {
	case clean == ".":
		return "", ErrPathEmpty
	case clean == ".." || strings.HasPrefix(clean, "../"):
		return "", ErrPathOutside
	case Hidden(clean):
		return clean, ErrPathHidden
	}
	return clean, nil
}

// Hidden reports whether the slash path p has a segment starting with a
// dot: a dot-file or dot-folder, which sources never serve (.git, .env,
// editor droppings such as .Foo.json.swp).
func Hidden(p string) bool {
	for part := range strings.SplitSeq(p, "/") {
		if strings.HasPrefix(part, ".") {
			return true
		}
	}
	return false
}

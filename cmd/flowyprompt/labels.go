package main

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/flowyprompt/flowyprompt/github"
	"github.com/flowyprompt/flowyprompt/internal/config"
	"github.com/flowyprompt/flowyprompt/internal/labelset"
	"github.com/flowyprompt/flowyprompt/templates"
)

// shareBlobs gives the GitHub sources of a configuration with labels one
// pool of files: the refs of the labels mostly hold the same files, which
// are then read from GitHub once. Without labels there is one ref per
// source, and nothing to share.
func shareBlobs(cfg *config.Config) {
	if len(cfg.LabelNames()) > 0 && cfg.Blobs == nil {
		cfg.Blobs = github.NewBlobPool(0)
	}
}

// labelsOf is the set of the configuration's labels, the default's
// library being lib; nil when no source names labels.
func labelsOf(cfg *config.Config, lib *templates.Library, log *slog.Logger, link replicas) *labelset.Set {
	names := cfg.LabelNames()
	if len(names) == 0 {
		return nil
	}
	return labelset.NewSet(names, lib, openLabel(cfg, log, link), log)
}

// openLabel opens the library of a label other than the default: the
// sources as configured, each GitHub source that names the label at its
// ref, and those that do not at their default's. Each is a source of its
// own, as the default's are: its disk cache and its shared catalog in the
// cluster are keyed by its ref, so labels never mix, and its files come
// from the pool the default's sources fill (cfg.Blobs).
func openLabel(cfg *config.Config, log *slog.Logger, link replicas) labelset.Open {
	return func(ctx context.Context, name string) (*templates.Library, error) {
		one := *cfg
		one.Sources = slices.Clone(cfg.Sources)
		for i, s := range one.Sources {
			if ref, ok := labelRef(s.Labels, name); ok {
				one.Sources[i].Ref = ref
			}
		}
		if ref, ok := labelRef(cfg.GitHubLabels, name); ok {
			one.GitHubRef = ref
		}
		llog := log.With("label", name)
		src, err := openSource(&one, llog, link)
		if err != nil {
			return nil, fmt.Errorf("label %s: %w", name, err)
		}
		lib := templates.NewLibrary(src, llog)
		if err := lib.Load(ctx); err != nil {
			return nil, err
		}
		return lib, nil
	}
}

// labelRef is the ref labels give name.
func labelRef(labels []config.Label, name string) (string, bool) {
	i := slices.IndexFunc(labels, func(l config.Label) bool { return l.Name == name })
	if i < 0 {
		return "", false
	}
	return labels[i].Ref, true
}

package main

import (
	"context"
	"errors"
	"io"
	"log/slog"

	"github.com/flowyprompt/flowyprompt/internal/app"
	"github.com/flowyprompt/flowyprompt/internal/config"
	"github.com/flowyprompt/flowyprompt/mcp"
	"github.com/flowyprompt/flowyprompt/templates"
)

func githubSource(*config.Config, *slog.Logger) (templates.Source, error) {
	return nil, &exitError{code: 2, err: errors.New("the GitHub source is not built into this version: unset GITHUB_REPO_URL, or use --templates DIR")}
}

func serveHTTP(context.Context, *setup, *mcp.Engine, io.Writer) error {
	return &exitError{code: 2, err: errors.New("the HTTP transport is not built into this version: use --transport stdio")}
}

func cmdCheck(context.Context, []string, io.Writer, io.Writer, env) error {
	return &exitError{code: 2, err: errors.New("check needs the GitHub source, which is not built into this version")}
}

func writerFor(templates.Source) app.TemplateWriter { return nil }

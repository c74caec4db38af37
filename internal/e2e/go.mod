// internal/e2e holds no Go code: the end-to-end tests are Node's, and
// npm ci fills node_modules here. This file makes the folder a module of
// its own so that the go command's ./... never walks into node_modules,
// which make test's npm ci may be rewriting while go test ./... runs.
module github.com/flowyprompt/flowyprompt/internal/e2e

go 1.26

module github.com/flowyprompt/flowyprompt

go 1.26.0

require (
	github.com/fsnotify/fsnotify v1.10.1
	github.com/google/go-cmp v0.7.0
	github.com/google/go-github/v66 v66.0.0
	github.com/r3labs/sse/v2 v2.10.0
	github.com/sourcegraph/jsonrpc2 v0.2.3
	github.com/xeipuuv/gojsonschema v1.2.0
	golang.org/x/sync v0.24.0
)

require (
	github.com/google/go-querystring v1.1.0 // indirect
	github.com/xeipuuv/gojsonpointer v0.0.0-20180127040702-4e3ac2762d5f // indirect
	github.com/xeipuuv/gojsonreference v0.0.0-20180127040603-bd5ef7bd5415 // indirect
	golang.org/x/net v0.0.0-20191116160921-f9c825593386 // indirect
	golang.org/x/sys v0.13.0 // indirect
	gopkg.in/cenkalti/backoff.v1 v1.1.0 // indirect
)

# flowyprompt — the two commands a newcomer needs are `make run` and `make test`.

GO          ?= go
BIN         := bin/flowyprompt
ADDR        ?= 127.0.0.1:3000
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
E2E         := internal/e2e
# The benchmark harness (mcpbench, the load generator, the peer servers) is a
# module of its own, so the product never depends on it.
HARNESS     := internal/bench
HGO         := cd $(HARNESS) && $(GO)

# A go.work would join the two modules' requirements (the harness could then
# import product packages and share its versions); every build here stands
# on each module's own go.mod, as on a fresh machine.
export GOWORK := off
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT      ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null)$(if $(findstring -dirty,$(VERSION)),-dirty)
LDFLAGS     := -X main.buildVersion=$(VERSION) -X main.buildCommit=$(COMMIT)

# Release builds: static (CGO_ENABLED=0), without local paths (-trimpath)
# or symbol tables (-s -w), for every platform a release ships.
DIST        := dist
PLATFORMS   := darwin/arm64 darwin/amd64 windows/amd64 linux/amd64 linux/arm64
HOST         = $(shell $(GO) env GOOS)/$(shell $(GO) env GOARCH)
MCPB        := $(E2E)/node_modules/.bin/mcpb
RELEASE     := $(GO) run ./internal/release
# $(call cross,PLATFORMS,DIR,TAGS) builds DIR/<os>-<arch>/flowyprompt[.exe]
# with -tags TAGS.
define cross
	@for p in $(1); do \
	  os=$${p%/*}; arch=$${p#*/}; ext=; [ "$$os" = windows ] && ext=.exe; \
	  echo "go build $(if $(3),-tags $(3) )$$os/$$arch"; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build $(if $(3),-tags $(3) )-trimpath -ldflags "-s -w $(LDFLAGS)" \
	    -o $(2)/$$os-$$arch/flowyprompt$$ext ./cmd/flowyprompt || exit 1; \
	done
endef
# $(call mcpb,PLATFORMS,NAME,OUT) stages and packs a bundle: the real
# manifest, with the desktop build's binaries of PLATFORMS. The desktop
# build (-tags desktop, internal/edition) leaves out what only a team's
# HTTP deployment uses, replicas over NATS and telemetry export, and with
# them more than a third of each binary; the release archives carry the
# full build.
define mcpb
	rm -rf bin/$(2)
	$(call cross,$(1),bin/$(2)/bins,desktop)
	$(RELEASE) bundle -version "$(VERSION)" -bins bin/$(2)/bins -platforms "$(1)" -license LICENSE -out bin/$(2)/stage
	$(MCPB) validate bin/$(2)/stage/manifest.json
	$(MCPB) pack bin/$(2)/stage $(3)
endef
# GNU make 4 prints each part of make test whole when it ends (-O); make
# 3.81 (macOS) has no -O and interleaves their lines.
SYNC        := $(if $(filter output-sync,$(.FEATURES)),-Otarget)

.PHONY: all build install test-bins run run-stdio test unit browser-deps e2e e2e-deps conformance lint fmt bench bench-peers bench-cluster fuzz clean bundle bundle-host release

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/flowyprompt

## install: build bin/flowyprompt (version stamped from git) and copy it into
## $(PREFIX)/bin, or $(go env GOPATH)/bin without PREFIX
install: build
	@dir="$(if $(PREFIX),$(PREFIX)/bin,$$($(GO) env GOPATH)/bin)"; \
	  mkdir -p "$$dir" && install -m 0755 $(BIN) "$$dir/flowyprompt" && echo "installed $$dir/flowyprompt ($(VERSION))"

# What the end-to-end tests start as processes: bin/flowyprompt (as
# `build` makes it), the fixture server of the official conformance suite,
# the fake GitHub API, the local cluster (NATS, fake GitHub, replicas,
# proxy) and the OpenID Provider the sign-in tests authorise against. One
# go build, so that the packages they share compile once.
test-bins:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/ ./cmd/flowyprompt ./cmd/conformance-server ./cmd/fakegithub ./cmd/testcluster ./cmd/testoidc

## run: serve the built-in example templates over HTTP (Void: /sse, Inspector: /mcp)
run: build
	@echo "flowyprompt on http://$(ADDR)"
	@echo "  Void IDE (~/.void-editor/mcp.json):  {\"mcpServers\":{\"flowyprompt\":{\"url\":\"http://$(ADDR)/sse\"}}}"
	@echo "  MCP Inspector:                       npx -y @modelcontextprotocol/inspector@2.12.0 (Node 22.19+)  ->  Streamable HTTP, http://$(ADDR)/mcp"
	@echo "  Claude Desktop (stdio), in claude_desktop_config.json:"
	@echo "    {\"mcpServers\":{\"flowyprompt\":{\"command\":\"$(CURDIR)/$(BIN)\",\"args\":[\"serve\"]}}}"
	@echo "Ctrl-C stops it."
	./$(BIN) serve --transport http --addr $(ADDR)

## run-stdio: serve over stdio, as Claude Desktop runs it
run-stdio: build
	./$(BIN) serve

## test: unit, race and fuzz-corpus tests (the product, then the benchmark
## harness's own tests) and, side by side with them, the real-client
## end-to-end tests; any failure fails it
# The two parts overlap: the race build and the Go tests use the CPU while
# npm ci downloads and the end-to-end tests, one file at a time (node's
# default on two cores), leave a core to spare. More files at once made
# the end-to-end run slower here, not faster: their clients (the
# Inspector CLI, the conformance suite) are node processes that want a
# core each. TEST_JOBS=1 runs the parts one after the other, as before.
TEST_JOBS   ?= 3
test:
	@$(MAKE) --no-print-directory -j$(TEST_JOBS) $(SYNC) unit e2e

# go vet after the race tests: run beside the end-to-end binaries' build
# (make test), it then finds their packages compiled instead of compiling
# them a second time.
unit: browser-deps
	$(GO) test -race -count=1 ./...
	$(GO) vet ./...
	$(HGO) vet ./...
	$(HGO) test -race -count=1 ./...

# The preview page's test (cmd/flowyprompt) drives headless Chromium:
# Debian's chromium package, installed here when neither chromium nor
# chromium-browser is on PATH. apt-get needs root, as CI runs make test;
# elsewhere, install the browser first. Without one the test fails.
browser-deps:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  { echo "installing chromium for the preview page's browser test (apt-get, as root)"; \
	    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; }

# The real clients the end-to-end tests drive, pinned by the lock file:
# installed again only when package.json or the lock file changed since
# the last install (npm ci empties node_modules first, stamp included).
E2E_STAMP   := $(E2E)/node_modules/.installed
e2e-deps: $(E2E_STAMP)
$(E2E_STAMP): $(E2E)/package.json $(E2E)/package-lock.json
	cd $(E2E) && npm ci --no-audit --no-fund
	touch $@

e2e: test-bins bundle-host
	cd $(E2E) && FLOWYPROMPT_BIN=$(CURDIR)/$(BIN) FLOWYPROMPT_CONFORMANCE_BIN=$(CURDIR)/bin/conformance-server \
	  FAKEGITHUB_BIN=$(CURDIR)/bin/fakegithub TESTCLUSTER_BIN=$(CURDIR)/bin/testcluster TESTOIDC_BIN=$(CURDIR)/bin/testoidc \
	  FLOWYPROMPT_BUNDLE=$(CURDIR)/bin/flowyprompt-host.mcpb node --test

## bundle: dist/flowyprompt.mcpb, the one-click install for Claude Desktop
## (an MCP Bundle: macOS universal, Windows x64, Linux x64 and arm64), with
## the desktop build of the binary (no NATS cluster, no telemetry export)
bundle: e2e-deps
	$(call mcpb,$(PLATFORMS),bundle,$(DIST)/flowyprompt.mcpb)

# bundle-host: the bundle with only this machine's binary, for the
# end-to-end test: the same manifest, layout and desktop build, one build
# instead of five.
bundle-host: e2e-deps
	$(call mcpb,$(HOST),bundle-host,bin/flowyprompt-host.mcpb)

## release: dist/ holds an archive per platform (tar.gz; zip for Windows)
## with the full binary, README.md and LICENSE, the bundle, SHA256SUMS, and
## server.json, the bundle's entry for the MCP Registry (publish it from a
## tagged commit: its download URL names the tag)
release: bundle
	rm -rf $(DIST)/flowyprompt_* $(DIST)/SHA256SUMS $(DIST)/server.json bin/release
	$(call cross,$(PLATFORMS),bin/release/bins)
	$(RELEASE) archive -version "$(VERSION)" -bins bin/release/bins -platforms "$(PLATFORMS)" \
	  -mtime "$$(git log -1 --format=%ct 2>/dev/null || echo 0)" -sum flowyprompt.mcpb -out $(DIST) README.md LICENSE
	$(RELEASE) server -version "$(VERSION)" -bundle $(DIST)/flowyprompt.mcpb -out $(DIST)/server.json
	@ls -l $(DIST)

## conformance: the official MCP conformance suite against cmd/conformance-server (0.1.16 --suite all;
## 0.2.0-alpha.12 --requirements 2026-07-28 and 2025-11-25), and its generic scenarios of both eras
## against flowyprompt serve --transport http (also part of make test)
conformance: test-bins e2e-deps
	cd $(E2E) && FLOWYPROMPT_BIN=$(CURDIR)/$(BIN) FLOWYPROMPT_CONFORMANCE_BIN=$(CURDIR)/bin/conformance-server \
	  node --test conformance-all.test.mjs conformance-next.test.mjs conformance.test.mjs

lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	$(HGO) vet ./...
	$(HGO) run $(STATICCHECK) ./...

fmt:
	gofmt -w .

## bench: Go benchmarks (extraction, rendering, engine, transports; the harness's
## end-to-end stdio run of the built binary and its load generator's parser)
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
	$(HGO) test -run '^$$' -bench . -benchmem ./...

## bench-peers: flowyprompt at its defaults (the audit log on), and with --log-level error
## (flowyprompt-quiet), against mcp-go, go-sdk and net/http's floor (httpfloor), alternating,
## 5 repetitions (~11 min on 2 cores); writes the tables and the goals into docs/performance.md
bench-peers:
	$(HGO) vet ./... && $(GO) test -count=1 ./...
	$(HGO) run ./cmd/mcpbench -markdown ../../docs/performance.md $(BENCH_PEERS_FLAGS)

## bench-cluster: requests per second and the replicas' CPU per request through
## a round-robin proxy, one replica against three, 2026 stateless and 2025 session
## requests (bin/testcluster -bench; at most 20,000 requests or 15 s a run, ~2 min)
bench-cluster: test-bins
	./bin/testcluster -bench -bin $(CURDIR)/$(BIN) $(BENCH_CLUSTER_FLAGS)

## fuzz: a short run of every fuzz target, the product's and the harness's
fuzz:
	@for mod in . $(HARNESS); do \
	  for pkg in $$(cd $$mod && $(GO) list ./...); do \
	    for f in $$(cd $$mod && $(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	      echo "== $$pkg $$f"; (cd $$mod && $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime 15s $$pkg) || exit 1; \
	    done; \
	  done; \
	done

clean:
	rm -rf bin $(DIST)

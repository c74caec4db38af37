# flowyprompt — the two commands a newcomer needs are `make run` and `make test`.

GO          ?= go
BIN         := bin/flowyprompt
ADDR        ?= 127.0.0.1:3000
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
E2E         := internal/e2e

.PHONY: all build run run-stdio test unit e2e e2e-deps lint fmt bench fuzz clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/flowyprompt

## run: serve the built-in example templates over HTTP (Void: /sse, Inspector: /mcp)
run: build
	@echo "flowyprompt on http://$(ADDR)"
	@echo "  Void IDE (~/.void-editor/mcp.json):  {\"mcpServers\":{\"flowyprompt\":{\"url\":\"http://$(ADDR)/sse\"}}}"
	@echo "  MCP Inspector:                       npx @modelcontextprotocol/inspector  ->  Streamable HTTP, http://$(ADDR)/mcp"
	@echo "  Claude Desktop (stdio), in claude_desktop_config.json:"
	@echo "    {\"mcpServers\":{\"flowyprompt\":{\"command\":\"$(CURDIR)/$(BIN)\",\"args\":[\"serve\"]}}}"
	@echo "Ctrl-C stops it."
	./$(BIN) serve --transport http --addr $(ADDR)

## run-stdio: serve over stdio, as Claude Desktop runs it
run-stdio: build
	./$(BIN) serve

## test: unit, race and fuzz-corpus tests, then the real-client end-to-end tests
test: unit e2e

unit:
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...

e2e-deps:
	cd $(E2E) && npm ci --no-audit --no-fund

e2e: build e2e-deps
	cd $(E2E) && FLOWYPROMPT_BIN=$(CURDIR)/$(BIN) node --test

lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

fmt:
	gofmt -w .

## bench: Go benchmarks (extraction, rendering, engine, transports, end-to-end stdio)
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

## fuzz: a short run of every fuzz target
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime 15s $$pkg || exit 1; \
	  done; \
	done

clean:
	rm -rf bin

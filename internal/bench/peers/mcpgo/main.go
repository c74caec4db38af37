// Command mcpgo is the reference MCP server built on
// github.com/mark3labs/mcp-go: one prompt per template in -templates and a
// render_template tool, over stdio, legacy SSE (/sse, posting to /message)
// or Streamable HTTP (/mcp). It uses the library as its README shows and is
// not tuned: it is the baseline flowyprompt is measured against.
//
// mcp-go validates tool arguments against the input schema only when asked
// (server.WithInputSchemaValidation); -validate turns that on, so the
// benchmark can compare like with like (flowyprompt always validates).
// Without it the handler checks the argument types itself, as an mcp-go
// server without validation must.
//
// Streamable HTTP runs stateful (server.WithStateful): sessions are tracked
// and an unknown Mcp-Session-Id is refused, as flowyprompt and go-sdk do.
// mcp-go's default only checks that a session id looks like a UUID.
// With -stateless it runs server.WithStateLess(true) instead: no session
// ids at all, every request served on its own, as protocol 2026-07-28 asks.
// (mcp-go decides a request's revision from its params._meta, so it takes
// 2026-07-28 requests in either mode; -stateless drops the sessions of the
// older revisions too, as the go-sdk peer's flag does.)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/flowyprompt/flowyprompt/internal/bench/peers/promptlib"
)

func main() {
	transport := flag.String("transport", "stdio", "stdio, sse (legacy HTTP+SSE at /sse) or http (Streamable HTTP at /mcp)")
	addr := flag.String("addr", "127.0.0.1:8302", "listen address for sse and http")
	dir := flag.String("templates", "", "template folder (required)")
	validate := flag.Bool("validate", false, "validate tool arguments against the input schema (server.WithInputSchemaValidation)")
	stateless := flag.Bool("stateless", false, "http: serve /mcp stateless (server.WithStateLess): no session ids, every request on its own")
	flag.Parse()
	if err := run(*transport, *addr, *dir, *validate, *stateless); err != nil {
		fmt.Fprintln(os.Stderr, "mcpgo:", err)
		os.Exit(1)
	}
}

func run(transport, addr, dir string, validate, stateless bool) error {
	ts, err := promptlib.LoadDir(dir)
	if err != nil {
		return err
	}
	s := newServer(ts, validate)
	switch transport {
	case "stdio":
		return server.ServeStdio(s, server.WithErrorLogger(log.New(os.Stderr, "mcpgo: ", 0)))
	case "sse":
		// The http.Server Start would make, given to the library so that
		// its Shutdown closes it, and served on a listener of our own so
		// that the server can say when it listens.
		hs := &http.Server{}
		srv := server.NewSSEServer(s, server.WithHTTPServer(hs))
		hs.Handler = srv
		return serve(addr, hs, srv.Shutdown)
	case "http":
		mode := server.WithStateful(true)
		if stateless {
			mode = server.WithStateLess(true)
		}
		hs := &http.Server{}
		srv := server.NewStreamableHTTPServer(s, mode, server.WithStreamableHTTPServer(hs))
		// As Start routes it: the endpoint at its default path.
		mux := http.NewServeMux()
		mux.Handle("/mcp", srv)
		hs.Handler = mux
		return serve(addr, hs, srv.Shutdown)
	default:
		return fmt.Errorf("unknown transport %q (want stdio, sse or http)", transport)
	}
}

// serve serves hs on addr until SIGINT or SIGTERM, then calls shutdown.
// Once the port accepts connections it says so on stderr ("listening on
// ADDR"), for whoever started it to wait on.
func serve(addr string, hs *http.Server, shutdown func(context.Context) error) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "mcpgo: listening on %s\n", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = shutdown(context.Background())
	}()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func newServer(ts []*promptlib.Template, validate bool) *server.MCPServer {
	opts := []server.ServerOption{server.WithPromptCapabilities(false), server.WithToolCapabilities(false)}
	if validate {
		opts = append(opts, server.WithInputSchemaValidation())
	}
	s := server.NewMCPServer("peer-mcpgo", "1.0.0", opts...)
	for _, t := range ts {
		popts := []mcp.PromptOption{mcp.WithPromptDescription(t.Description)}
		for _, v := range t.Variables {
			aopts := []mcp.ArgumentOption{mcp.ArgumentDescription(v.Description)}
			if v.Required {
				aopts = append(aopts, mcp.RequiredArgument())
			}
			popts = append(popts, mcp.WithArgument(v.Name, aopts...))
		}
		s.AddPrompt(mcp.NewPrompt(t.Name, popts...), func(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			text, err := t.Render(req.Params.Arguments)
			if err != nil {
				return nil, err
			}
			return mcp.NewGetPromptResult(t.Description, []mcp.PromptMessage{
				mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(text)),
			}), nil
		})
	}
	lib := promptlib.NewLibrary(ts)
	tool := mcp.NewTool("render_template",
		mcp.WithDescription("Render a prompt template with argument values into the finished prompt text (the same text prompts/get returns)."),
		mcp.WithString("name", mcp.Required(), mcp.Description("template name, exactly as prompts/list shows it"),
			mcp.Pattern("^[a-zA-Z0-9_-]+$"), mcp.MinLength(1), mcp.MaxLength(128)),
		mcp.WithObject("arguments", mcp.Description("values for the template's variables, by variable name"),
			mcp.AdditionalProperties(map[string]any{"type": "string", "maxLength": 10000})),
	)
	s.AddTool(tool, func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		name, err := req.RequireString("name")
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		args := map[string]string{}
		if raw, ok := req.GetArguments()["arguments"]; ok && raw != nil {
			m, ok := raw.(map[string]any)
			if !ok {
				return mcp.NewToolResultError("arguments must be an object of strings"), nil
			}
			for k, v := range m {
				str, ok := v.(string)
				if !ok {
					return mcp.NewToolResultError(fmt.Sprintf("arguments.%s must be a string", k)), nil
				}
				args[k] = str
			}
		}
		text, err := lib.RenderTool(name, args)
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return mcp.NewToolResultText(text), nil
	})
	return s
}

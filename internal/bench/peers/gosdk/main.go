// Command gosdk is the reference MCP server built on the official
// github.com/modelcontextprotocol/go-sdk: one prompt per template in
// -templates and a render_template tool, over stdio, legacy SSE (/sse) or
// Streamable HTTP (/mcp). It uses the SDK as its documentation shows and
// is not tuned: it is the baseline flowyprompt is measured against.
//
// With -stateless, /mcp runs in the SDK's stateless mode
// (StreamableHTTPOptions{Stateless: true}): no Mcp-Session-Id, a temporary
// session for every request. That is the mode in which the SDK serves
// protocol 2026-07-28, where every request carries its protocol version and
// client in params._meta and there is no initialize; a stateful handler
// refuses such requests.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowyprompt/flowyprompt/internal/bench/peers/promptlib"
)

func main() {
	transport := flag.String("transport", "stdio", "stdio, sse (legacy HTTP+SSE at /sse) or http (Streamable HTTP at /mcp)")
	addr := flag.String("addr", "127.0.0.1:8301", "listen address for sse and http")
	dir := flag.String("templates", "", "template folder (required)")
	stateless := flag.Bool("stateless", false, "http: serve /mcp stateless (StreamableHTTPOptions.Stateless): no sessions, every request on its own, the mode that speaks protocol 2026-07-28")
	flag.Parse()
	if err := run(*transport, *addr, *dir, *stateless); err != nil {
		fmt.Fprintln(os.Stderr, "gosdk:", err)
		os.Exit(1)
	}
}

func run(transport, addr, dir string, stateless bool) error {
	ts, err := promptlib.LoadDir(dir)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	server := newServer(ts, logger)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	switch transport {
	case "stdio":
		err := server.Run(ctx, &mcp.StdioTransport{})
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	case "sse":
		mux := http.NewServeMux()
		mux.Handle("/sse", mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return server }, nil))
		return serveHTTP(ctx, addr, mux)
	case "http":
		mux := http.NewServeMux()
		var opts *mcp.StreamableHTTPOptions
		if stateless {
			opts = &mcp.StreamableHTTPOptions{Stateless: true}
		}
		mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, opts))
		return serveHTTP(ctx, addr, mux)
	default:
		return fmt.Errorf("unknown transport %q (want stdio, sse or http)", transport)
	}
}

// renderArgs is the render_template tool's input; the SDK infers the input
// schema from it and validates every call against that schema.
type renderArgs struct {
	Name      string            `json:"name" jsonschema:"template name, exactly as prompts/list shows it"`
	Arguments map[string]string `json:"arguments,omitempty" jsonschema:"values for the template's variables, by variable name"`
}

func newServer(ts []*promptlib.Template, logger *slog.Logger) *mcp.Server {
	server := mcp.NewServer(&mcp.Implementation{Name: "peer-gosdk", Version: "1.0.0"}, &mcp.ServerOptions{Logger: logger})
	for _, t := range ts {
		p := &mcp.Prompt{Name: t.Name, Description: t.Description}
		for _, v := range t.Variables {
			p.Arguments = append(p.Arguments, &mcp.PromptArgument{Name: v.Name, Description: v.Description, Required: v.Required})
		}
		server.AddPrompt(p, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			text, err := t.Render(req.Params.Arguments)
			if err != nil {
				return nil, err
			}
			return &mcp.GetPromptResult{
				Description: t.Description,
				Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}},
			}, nil
		})
	}
	lib := promptlib.NewLibrary(ts)
	mcp.AddTool(server, &mcp.Tool{
		Name:        "render_template",
		Description: "Render a prompt template with argument values into the finished prompt text (the same text prompts/get returns).",
	}, func(_ context.Context, _ *mcp.CallToolRequest, in renderArgs) (*mcp.CallToolResult, any, error) {
		text, err := lib.RenderTool(in.Name, in.Arguments)
		if err != nil {
			// An error from a typed handler becomes an isError result.
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
	})
	return server
}

// serveHTTP serves h on addr until ctx ends. Once the port accepts
// connections it says so on stderr ("listening on ADDR"), for whoever
// started it to wait on.
func serveHTTP(ctx context.Context, addr string, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "gosdk: listening on %s\n", ln.Addr())
	srv := &http.Server{Handler: h}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

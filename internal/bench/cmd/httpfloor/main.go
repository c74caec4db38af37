// Command httpfloor is the floor of an MCP server on net/http: a
// Streamable HTTP endpoint that reads each POST's body and answers with a
// fixed prompts/get result of the benchmark's size (about 2.2 KB), doing
// no MCP work at all. What it costs per request, measured with an
// independent load generator, is what net/http alone costs any server
// built on it, flowyprompt included:
//
//	GOMAXPROCS=1 go run ./cmd/httpfloor -addr 127.0.0.1:39700 &
//	$LOADGEN -transport http -url http://127.0.0.1:39700/mcp -pid PID \
//	  -method prompts/get -params '{}' -c 50 -r 300 -warmup 5 -expect '"text"'
//
// mcpbench runs it as server httpfloor in the Streamable HTTP request
// scenario, with -templates, so that its answer is the benchmark prompt
// the other servers render, and checks flowyprompt's CPU per request
// against it.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"log"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/bench"
	"github.com/flowyprompt/flowyprompt/internal/bench/peers/promptlib"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:39700", "listen address")
	templates := flag.String("templates", "", "answer with the benchmark prompt rendered from this folder (as mcpbench runs it), not a fixed text of its size")
	flag.Parse()
	// The text of one benchmark prompt, escaped as it travels.
	text := strings.Repeat(`A line of the prompt that the model will read and follow.\n`, 36)
	if *templates != "" {
		// Rendered once, before serving: the answers must carry what the
		// load generator checks for, and no request does any MCP work.
		t, err := benchPrompt(*templates)
		if err != nil {
			log.Fatal(err)
		}
		text = t
	}
	result := `,"result":{"description":"d","messages":[{"role":"user","content":{"type":"text","text":"` + text + `"}}]}}`
	idRE := regexp.MustCompile(`"id":([0-9]+)`)
	srv := &http.Server{Addr: *addr, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 30 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			id := "0"
			if m := idRE.FindSubmatch(body); m != nil {
				id = string(m[1])
			}
			w.Header().Set("Content-Type", "application/json")
			switch {
			case bytes.Contains(body, []byte(`"initialize"`)):
				w.Header().Set("Mcp-Session-Id", "floor")
				io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"protocolVersion":"2025-06-18","capabilities":{"prompts":{}},"serverInfo":{"name":"httpfloor","version":"0"}}}`)
			case !bytes.Contains(body, []byte(`"id"`)):
				w.WriteHeader(http.StatusAccepted) // a notification
			default:
				io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+result)
			}
		})}
	log.Fatal(srv.ListenAndServe())
}

// benchPrompt is the benchmark prompt rendered from the templates in dir
// with the benchmark's arguments, as a JSON string's content.
func benchPrompt(dir string) (string, error) {
	ts, err := promptlib.LoadDir(dir)
	if err != nil {
		return "", err
	}
	text, err := promptlib.NewLibrary(ts).RenderTool(bench.PromptName, bench.Arguments)
	if err != nil {
		return "", err
	}
	quoted, err := json.Marshal(text)
	if err != nil {
		return "", err
	}
	return string(quoted[1 : len(quoted)-1]), nil
}

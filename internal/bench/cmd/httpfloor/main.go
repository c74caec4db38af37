// Command httpfloor is the floor of an MCP server on net/http: a
// Streamable HTTP endpoint that reads each POST's body and answers with a
// fixed prompts/get result of the benchmark's size (about 2.2 KB), doing
// no MCP work at all. What it costs per request, measured with an
// independent load generator, is what net/http alone costs any server
// built on it, flowyprompt included:
//
//	GOMAXPROCS=1 go run ./cmd/httpfloor -addr 127.0.0.1:39700 &
//	mcpload -transport http -url http://127.0.0.1:39700/mcp -pid PID \
//	  -method prompts/get -params '{}' -c 50 -r 300 -warmup 5 -expect '"text"'
package main

import (
	"bytes"
	"flag"
	"io"
	"log"
	"net/http"
	"regexp"
	"strings"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:39700", "listen address")
	flag.Parse()
	// The text of one benchmark prompt, escaped as it travels.
	text := strings.Repeat(`A line of the prompt that the model will read and follow.\n`, 36)
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

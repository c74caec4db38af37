package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// stdioClient is a sequential MCP client over a server's stdin/stdout,
// enough to ask each server for the same prompts and compare the answers.
type stdioClient struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	next int
}

func startStdio(ctx context.Context, command []string) (*stdioClient, error) {
	cmd := exec.CommandContext(ctx, command[0], command[1:]...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %v: %w", command, err)
	}
	c := &stdioClient{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}
	if _, err := c.call("initialize", map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "mcpbench-check", "version": "1"},
	}); err != nil {
		c.close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if err := c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

func (c *stdioClient) send(msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	_, err = c.in.Write(append(b, '\n'))
	return err
}

// rpcError is a JSON-RPC error answer.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("json-rpc error %d: %s", e.Code, e.Message) }

// call sends a request and waits for its response, skipping notifications
// the server sends meanwhile.
func (c *stdioClient) call(method string, params any) (json.RawMessage, error) {
	c.next++
	id := c.next
	if err := c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		return nil, err
	}
	for {
		line, err := c.out.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("read response: %w", err)
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  *rpcError       `json:"error"`
		}
		if err := json.Unmarshal(line, &m); err != nil {
			return nil, fmt.Errorf("response is not JSON: %w", err)
		}
		if m.Method != "" || string(m.ID) != strconv.Itoa(id) {
			continue
		}
		if m.Error != nil {
			return nil, m.Error
		}
		return m.Result, nil
	}
}

func (c *stdioClient) close() {
	c.in.Close()
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
}

// promptText asks for a prompt and returns its one message's text.
func (c *stdioClient) promptText(name string, args map[string]string) (string, error) {
	res, err := c.call("prompts/get", map[string]any{"name": name, "arguments": args})
	if err != nil {
		return "", err
	}
	var r struct {
		Messages []struct {
			Role    string `json:"role"`
			Content struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return "", err
	}
	if len(r.Messages) != 1 || r.Messages[0].Role != "user" || r.Messages[0].Content.Type != "text" {
		return "", fmt.Errorf("want one user text message, got %s", trim(res))
	}
	return r.Messages[0].Content.Text, nil
}

// toolText calls the render tool and returns the rendered prompt. flowyprompt
// wraps the prompt in a report for models (content[0]) and gives it bare in
// structuredContent.text; the peers return it bare as content[0].
func (c *stdioClient) toolText(tool, name string, args map[string]string) (string, error) {
	res, err := c.call("tools/call", map[string]any{"name": tool, "arguments": map[string]any{"name": name, "arguments": args}})
	if err != nil {
		return "", err
	}
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent *struct {
			Text string `json:"text"`
		} `json:"structuredContent"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return "", err
	}
	if r.IsError || len(r.Content) == 0 {
		return "", fmt.Errorf("tool failed: %s", trim(res))
	}
	if r.StructuredContent != nil && r.StructuredContent.Text != "" {
		return r.StructuredContent.Text, nil
	}
	return r.Content[0].Text, nil
}

func trim(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

// checkArgs are the argument sets every server must render alike: plain,
// non-ASCII and markup, and a value that looks like a placeholder (which
// must not be expanded again).
var checkArgs = []map[string]string{
	{"topic": "rate limits", "audience": "platform engineers", "tone": "direct"},
	{"topic": "요금 한도 — ünïcode", "audience": "<b>\"quoted\"</b> & co", "tone": "{{topic}}"},
}

// checkRendering asks every server for every template with each argument
// set, over stdio, and reports any text that differs from flowyprompt's:
// the comparison is only fair if all of them serve the same prompt.
func checkRendering(ctx context.Context, servers []*server, templatesDir string) error {
	names, err := templateNames(templatesDir)
	if err != nil {
		return err
	}
	want := map[string]string{} // key: template + args index
	var problems []string
	for _, s := range servers {
		c, err := startStdio(ctx, s.stdio())
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		for _, name := range names {
			for i, args := range checkArgs {
				key := name + "#" + strconv.Itoa(i)
				got, err := c.promptText(name, args)
				if err != nil {
					problems = append(problems, fmt.Sprintf("%s prompts/get %s: %v", s.name, key, err))
					continue
				}
				if w, ok := want[key]; !ok {
					want[key] = got
				} else if got != w {
					problems = append(problems, fmt.Sprintf("%s prompts/get %s differs from %s:\n%s", s.name, key, servers[0].name, firstDiff(w, got)))
				}
				// The tool must render exactly what prompts/get does.
				if i == 0 || name == names[0] {
					tt, err := c.toolText(s.tool, name, args)
					if err != nil {
						problems = append(problems, fmt.Sprintf("%s tools/call %s %s: %v", s.name, s.tool, key, err))
					} else if tt != want[key] {
						problems = append(problems, fmt.Sprintf("%s tools/call %s %s differs from prompts/get:\n%s", s.name, s.tool, key, firstDiff(want[key], tt)))
					}
				}
			}
		}
		c.close()
	}
	if len(problems) > 0 {
		if len(problems) > 10 {
			problems = append(problems[:10], fmt.Sprintf("… and %d more", len(problems)-10))
		}
		return errors.New("the servers do not render the same text:\n" + strings.Join(problems, "\n"))
	}
	return nil
}

// templateNames lists the template names in dir: the file names, which the
// benchmark templates keep equal to metadata.name.
func templateNames(dir string) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no templates in %s", dir)
	}
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = strings.TrimSuffix(filepath.Base(p), ".json")
	}
	sort.Strings(names)
	return names, nil
}

// firstDiff shows where two texts first differ, with a little context.
func firstDiff(want, got string) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	from := max(0, i-40)
	return fmt.Sprintf("  at byte %d\n  want …%q\n  got  …%q", i, want[from:min(len(want), i+40)], got[from:min(len(got), i+40)])
}

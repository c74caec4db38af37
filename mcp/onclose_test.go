package mcp_test

import (
	"sync"
	"testing"

	"github.com/flowyprompt/flowyprompt/internal/mcptest"
	"github.com/flowyprompt/flowyprompt/mcp"
)

// TestOnCloseRunsBeforeCloseReturns: hooks registered with OnClose have
// all run, once each, when Close returns, whoever calls Close and however
// many times; a hook registered on a closed session runs at once. A
// transport's session count relies on it: whoever sees a session ended
// finds it no longer counted.
func TestOnCloseRunsBeforeCloseReturns(t *testing.T) {
	e := mcptest.Engine(t, &mcp.Server{Info: mcp.Implementation{Name: "test", Version: "0"}}, mcp.EngineOptions{})
	c := mcptest.Connect(t, e)
	var mu sync.Mutex
	ran := map[string]int{}
	hook := func(name string) func() {
		return func() {
			mu.Lock()
			ran[name]++
			mu.Unlock()
		}
	}
	c.S.OnClose(hook("first"))
	c.S.OnClose(hook("second"))
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.S.Close()
			// Every Close returns after the hooks, not only the one
			// that ran them.
			mu.Lock()
			defer mu.Unlock()
			if ran["first"] != 1 || ran["second"] != 1 {
				t.Errorf("Close returned with the hooks run %v, want each once", ran)
			}
		}()
	}
	wg.Wait()
	c.S.OnClose(hook("late"))
	mu.Lock()
	defer mu.Unlock()
	if ran["late"] != 1 {
		t.Errorf("a hook registered on a closed session ran %d times before OnClose returned, want 1", ran["late"])
	}
}

package main

import (
	"bytes"
	"sync"
)

// expecter is a writer that tells the tests expecting a text when it is
// written, so that they wait for what a server says instead of polling.
type expecter struct {
	mu       sync.Mutex
	expected []*expectation
}

// expectation is a text a test waits for: seen is closed once it has been
// written; carry holds the end of the output so far, in case a write
// splits the text.
type expectation struct {
	text  []byte
	carry []byte
	seen  chan struct{}
}

// expect returns a channel closed once output written from now on
// contains text.
func (e *expecter) expect(text string) <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := &expectation{text: []byte(text), seen: make(chan struct{})}
	e.expected = append(e.expected, x)
	return x.seen
}

func (e *expecter) Write(p []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	waiting := e.expected[:0]
	for _, x := range e.expected {
		x.carry = append(x.carry, p...)
		if bytes.Contains(x.carry, x.text) {
			close(x.seen)
			continue
		}
		x.carry = append(x.carry[:0], x.carry[max(0, len(x.carry)-len(x.text)+1):]...)
		waiting = append(waiting, x)
	}
	clear(e.expected[len(waiting):])
	e.expected = waiting
	return len(p), nil
}

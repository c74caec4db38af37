package mcp

import (
	"runtime"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/logid"
)

// outboxLimit bounds the messages waiting in a session's outbox that no
// in-flight slot accounts for (notifications, error replies, questions to
// the client).
func (s *Session) outboxLimit() int { return s.engine.opts.MaxInflightPerSession + 64 }

// push appends m to the outbox and wakes the writer, starting one when
// none runs. slot says that writing m gives back the in-flight slot of the
// request it answers.
func (s *Session) push(m Outgoing, slot bool) {
	s.unwritten.Add(1)
	s.omu.Lock()
	s.oq = append(s.oq, m)
	if slot {
		s.oslots++
	}
	s.omu.Unlock()
	if s.writing.CompareAndSwap(false, true) {
		go s.writeLoop()
		return
	}
	select {
	case s.osignal <- struct{}{}:
	default:
	}
}

func (s *Session) queued() int {
	s.omu.Lock()
	defer s.omu.Unlock()
	return len(s.oq)
}

// enqueue puts a message in the outbox, waiting while a client that is
// slow to read has it full, which slows down only that client's reader or
// handler. It reports false when the session ended first.
func (s *Session) enqueue(m Outgoing) bool {
	for s.queued() >= s.outboxLimit() {
		select {
		case <-s.odrained:
		case <-s.done:
			return false
		}
	}
	if s.isDone() {
		return false
	}
	s.push(m, false)
	return true
}

// offer queues an unsolicited message without ever blocking the caller: a
// client that stopped reading fills only its own outbox, and is closed.
func (s *Session) offer(m Outgoing) {
	if s.isDone() {
		return
	}
	if s.queued() >= s.outboxLimit() {
		s.engine.log.Warn("closing a session that stopped reading", logid.Session(s.id))
		s.Close()
		return
	}
	s.push(m, false)
}

// writerLinger is how long a writer with nothing to write waits before it
// exits: a busy session keeps its writer, an idle one holds no goroutine.
const writerLinger = 250 * time.Millisecond

// writeLoop is the only writer to the sink while it runs, and at most one
// runs at a time (the writing flag).
func (s *Session) writeLoop() {
	// The timer is not re-armed after every write, which cost a timer
	// update per message on a busy session: when it fires, the writer
	// looks at how long ago it last wrote and waits out the rest.
	idle := time.NewTimer(writerLinger)
	defer idle.Stop()
	var last time.Time
	for {
		// The writer is woken by the first message of a burst, and the
		// scheduler runs a goroutine just woken first: without this it
		// would write that message alone while the handlers of the others
		// wait to run. Yielding once lets the handlers ready to run finish
		// first, so the burst leaves in one write.
		runtime.Gosched()
		if !s.flush() || s.isDone() {
			s.finishWriter()
			return
		}
		last = time.Now()
	wait:
		select {
		case <-s.osignal:
			continue
		case <-s.done:
			s.finishWriter()
			return
		case <-idle.C:
			if rest := writerLinger - time.Since(last); rest > 0 {
				idle.Reset(rest)
				goto wait
			}
		}
		idle.Reset(writerLinger) // for the next round, if the writer stays
		s.writing.Store(false)
		// A push between our last look and the Store saw a writer and only
		// signalled: look again, and carry on if we can take the role back.
		if s.queued() == 0 && !s.isDone() {
			return
		}
		if !s.writing.CompareAndSwap(false, true) {
			return // a new writer (or Close) took over
		}
	}
}

func (s *Session) isDone() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// flush writes batches until the outbox is empty. false means the
// transport failed and the session was closed.
func (s *Session) flush() bool {
	for {
		s.omu.Lock()
		batch, slots := s.oq, s.oslots
		s.oq, s.ospare, s.oslots = s.ospare[:0], nil, 0
		s.omu.Unlock()
		if len(batch) == 0 {
			return true
		}
		select {
		case s.odrained <- struct{}{}:
		default:
		}
		err := s.sink.Send(batch)
		s.unwritten.Add(-int64(len(batch)))
		for range slots {
			<-s.slots
		}
		clear(batch)
		if cap(batch) <= 64 {
			// Keep a small buffer for the next burst; let big ones go.
			s.omu.Lock()
			if s.ospare == nil {
				s.ospare = batch[:0]
			}
			s.omu.Unlock()
		}
		if err != nil {
			s.engine.log.Debug("session transport failed", logid.Session(s.id), "err", err)
			s.Close()
			return false
		}
	}
}

// finishWriter closes the sink once the session is over. Whoever holds
// the writing role when the session ends calls it, exactly once.
func (s *Session) finishWriter() {
	s.sink.Close()
	close(s.writerDone)
}

package app

import (
	"container/list"
	"strings"
	"sync"
)

// memory keeps, for each client session, the values it used for each
// template variable, most recent first, so that argument completion can
// offer them back. It is the app's, not the protocol's: what is worth
// remembering is the app's business, and the protocol only says which
// session a request came on (mcp.Request.SessionID) and when a session
// ends (mcp.Server.OnSessionClosed, which calls forget).
//
// It is bounded three ways, so that no client can make the server hold
// more than a known amount: a value longer than maxMemoryValue is not
// kept (a completion offers what a person would type, not a pasted diff),
// a session keeps at most maxSessionMemory bytes and all sessions together
// maxTotalMemory; past either, the oldest values go first. The zero value
// is ready to use with those limits.
type memory struct {
	mu        sync.Mutex
	bySession map[string]*sessionMemory
	all       list.List // of *memoryEntry, oldest first
	total     int       // bytes held, as memoryEntry.size counts them

	// Limits; 0 means the default (tests set small ones).
	maxValue, maxSession, maxTotal int
}

// The defaults of memory's limits (docs/http.md, "Limits").
const (
	maxMemoryValue   = 1024     // bytes of one value kept
	maxSessionMemory = 64 << 10 // bytes one session keeps
	maxTotalMemory   = 16 << 20 // bytes all sessions keep
	memoryOverhead   = 128      // bytes counted per value beyond its strings: the entry, its list elements, its slice slot
)

// maxRemembered bounds the values kept per variable and session.
const maxRemembered = 20

// memoryKey names a variable of a template.
type memoryKey struct{ template, variable string }

type sessionMemory struct {
	vars  map[memoryKey][]*memoryEntry // most recent first
	order list.List                    // of *memoryEntry, oldest first
	bytes int
}

type memoryEntry struct {
	session string
	key     memoryKey
	value   string
	size    int
	inAll   *list.Element
	inOwn   *list.Element
}

func (m *memory) limits() (value, session, total int) {
	value, session, total = m.maxValue, m.maxSession, m.maxTotal
	if value == 0 {
		value = maxMemoryValue
	}
	if session == 0 {
		session = maxSessionMemory
	}
	if total == 0 {
		total = maxTotalMemory
	}
	return value, session, total
}

// remember records value for a variable of a template in session.
func (m *memory) remember(session, template, variable, value string) {
	maxValue, maxSession, maxTotal := m.limits()
	if value == "" || session == "" || len(value) > maxValue {
		return
	}
	key := memoryKey{template, variable}
	m.mu.Lock()
	defer m.mu.Unlock()
	sm := m.bySession[session]
	if sm == nil {
		if m.bySession == nil {
			m.bySession = make(map[string]*sessionMemory)
		}
		sm = &sessionMemory{vars: make(map[memoryKey][]*memoryEntry)}
		m.bySession[session] = sm
	}
	old := sm.vars[key]
	if len(old) > 0 && old[0].value == value {
		return // the common case of a client repeating itself costs nothing
	}
	for _, e := range old {
		if e.value == value {
			m.drop(e) // moves to the front below
			break
		}
	}
	if old = sm.vars[key]; len(old) >= maxRemembered {
		m.drop(old[len(old)-1])
	}
	// A template's strings share one allocation with its text: an entry
	// holding its name would keep the whole template alive for the
	// session's life, after a reload replaced it. The session id is the
	// caller's, and a value the client's request's.
	e := &memoryEntry{session: strings.Clone(session), key: memoryKey{strings.Clone(template), strings.Clone(variable)},
		value: strings.Clone(value)}
	e.size = len(e.session) + len(e.key.template) + len(e.key.variable) + len(e.value) + memoryOverhead
	m.bySession[session] = sm // again: dropping its only value above removed it
	e.inAll, e.inOwn = m.all.PushBack(e), sm.order.PushBack(e)
	sm.vars[e.key] = append([]*memoryEntry{e}, sm.vars[e.key]...)
	sm.bytes += e.size
	m.total += e.size
	for sm.bytes > maxSession {
		m.drop(sm.order.Front().Value.(*memoryEntry))
	}
	for m.total > maxTotal {
		m.drop(m.all.Front().Value.(*memoryEntry))
	}
}

// drop forgets one value. m.mu is held.
func (m *memory) drop(e *memoryEntry) {
	sm := m.bySession[e.session]
	m.all.Remove(e.inAll)
	sm.order.Remove(e.inOwn)
	m.total -= e.size
	sm.bytes -= e.size
	vals := sm.vars[e.key]
	for i, v := range vals {
		if v == e {
			vals = append(vals[:i:i], vals[i+1:]...)
			break
		}
	}
	if len(vals) == 0 {
		delete(sm.vars, e.key)
	} else {
		sm.vars[e.key] = vals
	}
	if sm.order.Len() == 0 {
		delete(m.bySession, e.session)
	}
}

// recall returns the values session used for a variable of a template,
// most recent first.
func (m *memory) recall(session, template, variable string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	sm := m.bySession[session]
	if sm == nil {
		return nil
	}
	vals := sm.vars[memoryKey{template, variable}]
	out := make([]string, len(vals))
	for i, e := range vals {
		out[i] = e.value
	}
	return out
}

// forget drops what session used, once it has ended.
func (m *memory) forget(session string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	sm := m.bySession[session]
	if sm == nil {
		return
	}
	for sm.order.Len() > 0 {
		m.drop(sm.order.Front().Value.(*memoryEntry))
	}
}

// held is the bytes all sessions' values take, as the limits count them.
func (m *memory) held() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.total
}

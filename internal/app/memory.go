package app

import (
	"strings"
	"sync"
)

// memory keeps, for each client session, the values it used for each
// template variable, most recent first, so that argument completion can
// offer them back. It is the app's, not the protocol's: what is worth
// remembering is the app's business, and the protocol only says which
// session a request came on (mcp.Request.SessionID) and when a session
// ends (mcp.Server.OnSessionClosed, which calls forget).
type memory struct {
	mu        sync.Mutex
	bySession map[string]map[memoryKey][]string
}

// memoryKey names a variable of a template.
type memoryKey struct{ template, variable string }

// maxRemembered bounds the values kept per variable and session.
const maxRemembered = 20

// remember records value for a variable of a template in session.
func (m *memory) remember(session, template, variable, value string) {
	if value == "" || session == "" {
		return
	}
	key := memoryKey{template, variable}
	m.mu.Lock()
	defer m.mu.Unlock()
	vars := m.bySession[session]
	if vars == nil {
		if m.bySession == nil {
			m.bySession = make(map[string]map[memoryKey][]string)
		}
		vars = make(map[memoryKey][]string)
		m.bySession[session] = vars
	}
	old, known := vars[key]
	if len(old) > 0 && old[0] == value {
		return // the common case of a client repeating itself costs nothing
	}
	if !known {
		// A template's strings share one allocation with its text: a key
		// holding its name would keep the whole template alive for the
		// session's life, after a reload replaced it.
		key = memoryKey{strings.Clone(template), strings.Clone(variable)}
	}
	vals := make([]string, 0, min(len(old)+1, maxRemembered))
	vals = append(vals, value)
	for _, v := range old {
		if v != value && len(vals) < maxRemembered {
			vals = append(vals, v)
		}
	}
	vars[key] = vals
}

// recall returns the values session used for a variable of a template,
// most recent first.
func (m *memory) recall(session, template, variable string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.bySession[session][memoryKey{template, variable}]...)
}

// forget drops what session used, once it has ended.
func (m *memory) forget(session string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.bySession, session)
}

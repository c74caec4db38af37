package auth

import (
	"fmt"
	"net/http"
	"sync"
	"time"
)

// limitedKeys is the transport the issuer's keys are fetched through: a
// fetch within MinRefresh of the last one that succeeded is refused
// without being sent. The RemoteKeySet fetches the
// keys again whenever a token names a key id it has not seen; without
// this, every made-up key id would cost a request to the issuer.
type limitedKeys struct {
	base  http.RoundTripper
	every time.Duration
	now   func() time.Time

	mu   sync.Mutex
	last time.Time // of the last successful fetch; zero: none yet
}

func (l *limitedKeys) RoundTrip(r *http.Request) (*http.Response, error) {
	l.mu.Lock()
	if !l.last.IsZero() && l.now().Sub(l.last) < l.every {
		next := l.last.Add(l.every)
		l.mu.Unlock()
		return nil, fmt.Errorf("the keys were fetched less than %v ago; not again before %s", l.every, next.UTC().Format(time.RFC3339))
	}
	l.mu.Unlock()
	resp, err := l.base.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusOK {
		l.mu.Lock()
		l.last = l.now()
		l.mu.Unlock()
	}
	return resp, err
}

package github

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flowyprompt/flowyprompt/internal/fakegithub"
	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/templates"
)

var _ interface {
	templates.Source
	templates.Watcher
} = (*Source)(nil)

func TestColdStart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		ref     string
		wantRef string // as asked for in the commits request
	}{
		{name: "configured branch", ref: "main", wantRef: "main"},
		// Asking for HEAD needs no request to find the default branch.
		{name: "default branch", ref: "", wantRef: "HEAD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, standardLibrary())
			s := h.source(func(c *Config) { c.Ref = tt.ref })
			cat, err := s.Load(ctxT(t))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if diff := cmp.Diff(h.lib.Valid, names(cat)); diff != "" {
				t.Errorf("templates (-want +got):\n%s", diff)
			}
			wantInvalid := slices.Sorted(slices.Values(append(slices.Clone(h.lib.Invalid), h.lib.Oversized...)))
			if diff := cmp.Diff(wantInvalid, invalidPaths(cat)); diff != "" {
				t.Errorf("invalid files (-want +got):\n%s", diff)
			}
			for _, inv := range cat.Invalid() {
				f := fault.As(inv.Err)
				switch {
				case slices.Contains(h.lib.Oversized, inv.Path):
					if f == nil || f.Code != fault.TemplateTooLarge || f.Details["maxSize"] != int64(DefaultMaxFileSize) {
						t.Errorf("%s: reported %v, want TEMPLATE_TOO_LARGE with maxSize %d", inv.Path, inv.Err, DefaultMaxFileSize)
					}
				case f == nil || f.Code != fault.InvalidTemplate:
					t.Errorf("%s: reported %v, want INVALID_TEMPLATE", inv.Path, inv.Err)
				}
			}
			wantInfo := templates.SourceInfo{Kind: "github", Location: "https://github.com/acme/prompts", Ref: tt.ref, Revision: h.fake.Head()}
			if diff := cmp.Diff(wantInfo, cat.Info()); diff != "" {
				t.Errorf("catalog info (-want +got):\n%s", diff)
			}
			if cat.Stale() != nil {
				t.Errorf("fresh catalog marked stale: %+v", cat.Stale())
			}

			// The 146 blobs wanted come in one archive; oversized files
			// are refused by their size in the tree: their blobs are
			// never requested.
			c := h.costs()
			t.Logf("cold start, %d files: %v, %d download", len(h.lib.Files), c, h.fake.Downloads())
			want := map[string]int{"commit": 1, "tree": 1, "tarball": 1}
			if diff := cmp.Diff(want, c.ByRoute); diff != "" {
				t.Errorf("requests by route (-want +got):\n%s", diff)
			}
			if n := h.fake.Downloads(); n != 1 {
				t.Errorf("%d archive downloads, want 1", n)
			}
			for _, r := range h.fake.Requests() {
				if r.Pattern == fakegithub.RouteCommit && r.Path != "/repos/acme/prompts/commits/"+tt.wantRef {
					t.Errorf("resolved %s, want %s", r.Path, tt.wantRef)
				}
				if r.Pattern == fakegithub.RouteTarball && r.Path != "/repos/acme/prompts/tarball/"+h.fake.Head() {
					t.Errorf("archive asked as %s, want the resolved commit %s", r.Path, h.fake.Head())
				}
				for _, p := range h.lib.Oversized {
					if r.Path == "/repos/acme/prompts/git/blobs/"+fakegithub.BlobSHA(h.lib.Files[p]) {
						t.Errorf("oversized %s was downloaded", p)
					}
				}
			}

			// Load again within the TTL: no request at all.
			h.fake.Reset()
			if again, err := s.Load(ctxT(t)); err != nil || again != cat {
				t.Errorf("second Load = %p, %v; want the same catalog", again, err)
			}
			if n := h.fake.Total(); n != 0 {
				t.Errorf("Load within the TTL made %d requests, want 0", n)
			}
		})
	}
}

func TestRevalidateUnchanged(t *testing.T) {
	t.Parallel()
	h := newHarness(t, standardLibrary())
	s := h.source()
	bg := watchBackground(s)
	first, err := s.Load(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}

	// Past the TTL, Load answers at once with what it has and revalidates
	// in the background.
	h.fake.Reset()
	h.clock.Add(DefaultTTL + time.Second)
	got, err := s.Load(ctxT(t))
	if err != nil || got != first {
		t.Fatalf("Load after TTL = %p, %v; want the current catalog at once", got, err)
	}
	waitFor(t, bg, "background revalidation")
	c := h.costs()
	t.Logf("revalidation, nothing changed (background): %v", c)
	if c.Total > 2 || c.Total != c.Status[http.StatusNotModified] {
		t.Errorf("revalidation cost %v; want at most 2 requests, every one answered 304", c)
	}
	if got, _ := s.Load(ctxT(t)); got != first {
		t.Error("an unchanged revalidation replaced the catalog")
	}
	// The TTL started again: no request until it passes.
	h.fake.Reset()
	h.clock.Add(DefaultTTL - time.Second)
	s.Load(ctxT(t))
	if n := h.fake.Total(); n != 0 {
		t.Errorf("Load within the renewed TTL made %d requests, want 0", n)
	}
	// So does a restart: the 304's new expiry is on disk, not only in
	// memory.
	restarted := h.source()
	if cat, err := restarted.Load(ctxT(t)); err != nil || cat.Len() != first.Len() || restarted.due(h.clock.Now()) {
		t.Errorf("restart within the renewed TTL: %v, due %v; want the cached catalog, not due", err, restarted.due(h.clock.Now()))
	}
	if n := h.fake.Total(); n != 0 {
		t.Errorf("restart within the renewed TTL made %d requests, want 0", n)
	}

	// A forced refresh costs the same single 304.
	h.fake.Reset()
	if _, err := s.Refresh(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	c = h.costs()
	t.Logf("forced refresh, nothing changed: %v", c)
	if c.Total > 2 || c.Total != c.Status[http.StatusNotModified] {
		t.Errorf("refresh cost %v; want at most 2 requests, every one answered 304", c)
	}
	if rem := h.fake.Remaining(); rem < 5000-len(h.lib.Files)-3 {
		t.Errorf("rate limit remaining %d: 304s were counted against it", rem)
	}
}

func TestRevalidateChanged(t *testing.T) {
	t.Parallel()
	newContent := fakegithub.ValidTemplate("Generated_005", "Rewritten: {{subject}}")
	tests := []struct {
		name      string
		change    func(f *fakegithub.Server)
		wantCost  int
		wantNames func(lib fakegithub.Library) []string
		check     func(t *testing.T, c *templates.Catalog)
	}{
		{
			name:      "one file changed",
			change:    func(f *fakegithub.Server) { f.PutFile("templates/Generated_005.json", newContent) },
			wantCost:  3,
			wantNames: func(lib fakegithub.Library) []string { return lib.Valid },
			check: func(t *testing.T, c *templates.Catalog) {
				e, ok := c.Lookup("Generated_005")
				if !ok || string(e.Raw) != string(newContent) {
					t.Errorf("Generated_005 not updated: %v", ok)
				}
			},
		},
		{
			name: "one file added",
			change: func(f *fakegithub.Server) {
				f.PutFile("templates/Added.json", fakegithub.ValidTemplate("Added", "New {{subject}}"))
			},
			wantNames: func(lib fakegithub.Library) []string {
				return slices.Sorted(slices.Values(append(slices.Clone(lib.Valid), "Added")))
			},
			wantCost: 3,
		},
		{
			name:   "one file deleted",
			change: func(f *fakegithub.Server) { f.DeleteFile("templates/Generated_000.json") },
			wantNames: func(lib fakegithub.Library) []string {
				return slices.DeleteFunc(slices.Clone(lib.Valid), func(n string) bool { return n == "Generated_000" })
			},
			wantCost: 2,
		},
		{
			name:      "a file outside the folder changed",
			change:    func(f *fakegithub.Server) { f.PutFile("README.md", []byte("changed")) },
			wantNames: func(lib fakegithub.Library) []string { return lib.Valid },
			wantCost:  2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, standardLibrary())
			s := h.source()
			bg := watchBackground(s)
			before, err := s.Load(ctxT(t))
			if err != nil {
				t.Fatal(err)
			}
			tt.change(h.fake)
			h.fake.Reset()
			h.clock.Add(DefaultTTL + time.Second)
			if got, _ := s.Load(ctxT(t)); got != before {
				t.Fatal("Load after TTL did not return the current catalog at once")
			}
			waitFor(t, bg, "background revalidation")
			c := h.costs()
			t.Logf("revalidation, %s: %v", tt.name, c)
			if c.Total != tt.wantCost || c.Total > 4 {
				t.Errorf("cost %v, want %d requests (at most 4)", c, tt.wantCost)
			}
			after, _ := s.Load(ctxT(t))
			if diff := cmp.Diff(tt.wantNames(h.lib), names(after)); diff != "" {
				t.Errorf("templates after the change (-want +got):\n%s", diff)
			}
			if after.Info().Revision != h.fake.Head() {
				t.Errorf("revision %s, want the new head %s", after.Info().Revision, h.fake.Head())
			}
			if tt.check != nil {
				tt.check(t, after)
			}
		})
	}
}

func TestGitHubFailing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		fail      func(f *fakegithub.Server)
		heal      func(f *fakegithub.Server) // nil: cannot heal within the test (rate limit until a real reset)
		wantCode  string
		sentinel  error
		wantRetry bool
	}{
		{name: "server error", fail: func(f *fakegithub.Server) { f.SetFault(500) }, heal: func(f *fakegithub.Server) { f.SetFault(0) },
			wantCode: fault.NetworkError, sentinel: ErrUnavailable},
		{name: "bad gateway", fail: func(f *fakegithub.Server) { f.SetFault(502) }, heal: func(f *fakegithub.Server) { f.SetFault(0) },
			wantCode: fault.NetworkError, sentinel: ErrUnavailable},
		{name: "unreachable", fail: func(f *fakegithub.Server) { f.SetDown(true) }, heal: func(f *fakegithub.Server) { f.SetDown(false) },
			wantCode: fault.NetworkError, sentinel: ErrUnavailable},
		{name: "token refused", fail: func(f *fakegithub.Server) { f.SetToken("ghp_someoneElsesToken000000000000000000") },
			heal: func(f *fakegithub.Server) { f.SetToken(testToken) }, wantCode: fault.GitHubAuthFailed, sentinel: ErrUnauthorized},
		{name: "rate limited", fail: func(f *fakegithub.Server) { f.SetRateLimited(time.Now().Add(time.Hour)) },
			wantCode: fault.GitHubRateLimited, sentinel: ErrRateLimited, wantRetry: true},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/holding a catalog", func(t *testing.T) {
			h := newHarness(t, standardLibrary())
			s := h.source()
			var notified []*templates.Catalog
			s.mu.Lock()
			s.subs[0] = func(c *templates.Catalog) { notified = append(notified, c) }
			s.mu.Unlock()
			good, err := s.Load(ctxT(t))
			if err != nil {
				t.Fatal(err)
			}
			notified = nil

			tt.fail(h.fake)
			h.clock.Add(DefaultTTL + time.Second)
			failedAt := h.clock.Now()
			h.fake.Reset()
			cat, err := s.Refresh(ctxT(t))
			t.Logf("failed revalidation (%s): %v", tt.name, h.costs())
			if fault.CodeOf(err) != tt.wantCode || !errors.Is(err, tt.sentinel) {
				t.Fatalf("Refresh error = %v (code %s), want %s matching %v", err, fault.CodeOf(err), tt.wantCode, tt.sentinel)
			}
			st := cat.Stale()
			if st == nil {
				t.Fatal("catalog served after a failure is not marked stale")
			}
			if st.Code != tt.wantCode || !st.Since.Equal(failedAt) || st.Reason == "" || (st.RetryAfter > 0) != tt.wantRetry {
				t.Errorf("staleness = %+v, want code %s since %v (retry after: %v)", st, tt.wantCode, failedAt, tt.wantRetry)
			}
			if diff := cmp.Diff(names(good), names(cat)); diff != "" {
				t.Errorf("stale catalog lost templates (-want +got):\n%s", diff)
			}
			if len(notified) != 1 || notified[0].Stale() == nil {
				t.Errorf("watchers got %d catalogs, want 1 marked stale", len(notified))
			}

			// Requests keep being served from the stale catalog, without
			// waiting and without a warning per request.
			for range 5 {
				h.clock.Add(DefaultTTL)
				if _, err := s.Refresh(ctxT(t)); fault.CodeOf(err) != tt.wantCode {
					t.Fatalf("Refresh during the outage: %v, want %s", err, tt.wantCode)
				}
				// Not due again yet (failures back off), so this answers
				// at once without starting anything.
				got, err := s.Load(ctxT(t))
				if err != nil || got.Stale() == nil || got.Len() != good.Len() {
					t.Fatalf("Load during the outage = %v stale=%v, %v", got.Len(), got.Stale(), err)
				}
			}
			if n := h.logs.count("WARN", "cannot revalidate"); n != 1 {
				t.Errorf("%d warnings for one outage, want 1", n)
			}
			if got, _ := s.Load(ctxT(t)); got.Stale() == nil || !got.Stale().Since.Equal(failedAt) {
				t.Errorf("stale since moved during the outage: %+v", got.Stale())
			}

			if tt.heal == nil {
				return
			}
			tt.heal(h.fake)
			notified = nil
			cat, err = s.Refresh(ctxT(t))
			if err != nil || cat.Stale() != nil {
				t.Fatalf("after recovery: stale=%+v err=%v, want a fresh catalog", cat.Stale(), err)
			}
			if got, _ := s.Load(ctxT(t)); got.Stale() != nil {
				t.Error("Load still serves a stale catalog after recovery")
			}
			if len(notified) != 1 || notified[0].Stale() != nil {
				t.Errorf("watchers got %d catalogs on recovery, want 1 fresh", len(notified))
			}
			if h.logs.count("INFO", "reachable again") != 1 {
				t.Error("recovery was not logged")
			}
			// The next outage warns again.
			tt.fail(h.fake)
			s.Refresh(ctxT(t))
			if n := h.logs.count("WARN", "cannot revalidate"); n != 2 {
				t.Errorf("%d warnings after a second outage, want 2", n)
			}
		})

		t.Run(tt.name+"/without a catalog", func(t *testing.T) {
			h := newHarness(t, standardLibrary())
			tt.fail(h.fake)
			s := h.source()
			cat, err := s.Load(ctxT(t))
			t.Logf("cold start failing (%s): %v", tt.name, h.costs())
			if cat != nil {
				t.Errorf("Load returned a catalog with %d templates", cat.Len())
			}
			f := fault.As(err)
			if f == nil || f.Code != tt.wantCode || !errors.Is(err, tt.sentinel) || f.What == "" || f.Why == "" || f.How == "" {
				t.Fatalf("Load error = %#v, want a what/why/how fault with code %s", err, tt.wantCode)
			}
			if tt.wantRetry && f.RetryAfter <= 0 {
				t.Errorf("RetryAfter = %v, want the time to the reset", f.RetryAfter)
			}
			// Right after a failure, requests get the same error without
			// hammering GitHub.
			h.fake.Reset()
			if _, err2 := s.Load(ctxT(t)); fault.CodeOf(err2) != tt.wantCode {
				t.Errorf("second Load error = %v, want %s again", err2, tt.wantCode)
			}
			if n := h.fake.Total(); n != 0 {
				t.Errorf("second Load within the backoff made %d requests", n)
			}
		})
	}
}

func TestNotFound(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		edit    func(*Config)
		wantSay string
	}{
		{name: "repository", edit: func(c *Config) { c.RepoURL = "https://github.com/acme/missing" }, wantSay: "repository acme/missing"},
		{name: "repository, default branch", edit: func(c *Config) { c.RepoURL = "acme/missing"; c.Ref = "" }, wantSay: "repository acme/missing"},
		{name: "ref", edit: func(c *Config) { c.Ref = "no-such-branch" }, wantSay: `ref "no-such-branch"`},
		{name: "pinned commit", edit: func(c *Config) { c.Ref = "0123456789abcdef0123456789abcdef01234567" }, wantSay: `ref "0123456789abcdef0123456789abcdef01234567"`},
		{name: "folder", edit: func(c *Config) { c.Path = "prompts" }, wantSay: `folder "prompts"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, standardLibrary())
			_, err := h.source(tt.edit).Load(ctxT(t))
			f := fault.As(err)
			if f == nil || f.Code != fault.GitHubNotFound || !errors.Is(err, ErrNotFound) {
				t.Fatalf("Load error = %v, want GITHUB_NOT_FOUND", err)
			}
			if !contains(f.Why, tt.wantSay) {
				t.Errorf("why = %q, want it to name the %s (%q)", f.Why, tt.name, tt.wantSay)
			}
		})
	}
}

func TestRestartWithDiskCache(t *testing.T) {
	t.Parallel()
	h := newHarness(t, standardLibrary())
	first, err := h.source().Load(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("within the TTL", func(t *testing.T) {
		h.fake.Reset()
		s := h.source()
		cat, err := s.Load(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(names(first), names(cat)); diff != "" {
			t.Errorf("restarted catalog (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(invalidPaths(first), invalidPaths(cat)); diff != "" {
			t.Errorf("restarted invalid files (-want +got):\n%s", diff)
		}
		t.Logf("restart within the TTL: %v", h.costs())
		if n := h.fake.Total(); n != 0 {
			t.Errorf("restart within the TTL made %d requests, want 0", n)
		}
	})

	t.Run("after the TTL", func(t *testing.T) {
		restartPastTTL(t, h, first.Len())
		c := h.costs()
		t.Logf("restart after the TTL: %v", c)
		if c.Total > 2 || c.Total != c.Status[http.StatusNotModified] {
			t.Errorf("restart cost %v; want at most 2 requests, all 304", c)
		}
	})

	t.Run("GitHub unreachable", func(t *testing.T) {
		h.fake.SetDown(true)
		defer h.fake.SetDown(false)
		s := restartPastTTL(t, h, first.Len())
		c := h.costs()
		t.Logf("restart with GitHub unreachable: %v", c)
		if c.Total > 2 {
			t.Errorf("restart with GitHub unreachable cost %v; want at most 2 attempts", c)
		}
		cat, _ := s.Load(ctxT(t))
		if st := cat.Stale(); st == nil || st.Code != fault.NetworkError {
			t.Errorf("staleness = %+v, want NETWORK_ERROR", st)
		}
		if cat.Len() != first.Len() {
			t.Errorf("stale catalog has %d templates, want %d", cat.Len(), first.Len())
		}
	})

	t.Run("another token does not reuse the ETag", func(t *testing.T) {
		h.clock.Add(DefaultTTL + time.Second)
		h.fake.SetToken("")
		defer h.fake.SetToken(testToken)
		h.fake.Reset()
		s := h.source(func(c *Config) { c.Token = "" })
		if _, err := s.Refresh(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		// Sources of the earlier subtests share the fake clock: the jump
		// past the TTL may start their own (authorised) revalidation. Only
		// this source's requests, made without a token, are in question.
		var reqs []fakegithub.Request
		for _, r := range h.fake.Requests() {
			if !r.Authorized {
				reqs = append(reqs, r)
			}
		}
		t.Logf("restart with other credentials: %v", h.costs())
		if len(reqs) != 1 || reqs[0].IfNoneMatch != "" || reqs[0].Status != http.StatusOK {
			t.Errorf("requests = %+v; want one unconditional commit request (same commit: no tree, no blobs)", reqs)
		}
	})

	t.Run("corrupt cache file", func(t *testing.T) {
		s := h.source()
		if err := writeFile(s.cachePath, []byte("{not json")); err != nil {
			t.Fatal(err)
		}
		h.fake.Reset()
		cat, err := h.source().Load(ctxT(t))
		if err != nil || cat.Len() != first.Len() {
			t.Fatalf("Load over a corrupt cache = %d, %v", cat.Len(), err)
		}
		if h.logs.count("WARN", "corrupt cache") == 0 {
			t.Error("a corrupt cache file was not reported")
		}
		t.Logf("start over a corrupt cache file: %v", h.costs())
	})
}

// restartPastTTL starts a source on the disk cache once the TTL has
// passed: Load must answer at once with the cached catalog (want
// templates), and the revalidation it starts in the background is waited
// for. Requests are counted from the restart.
func restartPastTTL(t *testing.T, h *harness, want int) *Source {
	t.Helper()
	h.clock.Add(DefaultTTL + time.Second)
	h.fake.Reset()
	s := h.source()
	bg := watchBackground(s)
	cat, err := s.Load(ctxT(t))
	if err != nil || cat.Len() != want {
		t.Fatalf("Load after a restart = %d templates, %v; want the %d cached", cat.Len(), err, want)
	}
	waitFor(t, bg, "background revalidation")
	return s
}

func TestPinnedCommit(t *testing.T) {
	t.Parallel()
	h := newHarness(t, standardLibrary())
	sha := h.fake.Head()
	s := h.source(func(c *Config) { c.Ref = sha })
	cat, err := s.Load(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	c := h.costs()
	t.Logf("cold start pinned to a commit: %v", c)
	if c.ByRoute["commit"] != 0 || c.ByRoute["tree"] != 1 {
		t.Errorf("pinned cold start %v; want no ref resolution and one tree", c)
	}
	h.fake.PutFile("templates/Generated_001.json", fakegithub.ValidTemplate("Generated_001", "changed {{subject}}"))
	h.fake.Reset()
	for range 3 {
		h.clock.Add(10 * DefaultTTL)
		if got, err := s.Load(ctxT(t)); err != nil || got != cat {
			t.Fatalf("Load = %p, %v; want the pinned catalog", got, err)
		}
		if got, err := s.Refresh(ctxT(t)); err != nil || got != cat {
			t.Fatalf("Refresh = %p, %v; want the pinned catalog", got, err)
		}
	}
	if n := h.fake.Total(); n != 0 {
		t.Errorf("a pinned commit was revalidated: %d requests", n)
	}
	// A restart pinned to the same commit needs nothing from GitHub.
	h.fake.SetDown(true)
	again, err := h.source(func(c *Config) { c.Ref = sha }).Load(ctxT(t))
	if err != nil || again.Len() != cat.Len() || again.Stale() != nil {
		t.Errorf("pinned restart offline = %d templates, stale %v, %v", again.Len(), again.Stale(), err)
	}
}

// manualTimer stands in for Watch's timer: the test sees each delay Watch
// arms and fires the timer by hand, while the fake clock says what time it
// is.
type manualTimer struct {
	armed chan time.Duration
	c     chan time.Time
}

func installTimer(s *Source) *manualTimer {
	m := &manualTimer{armed: make(chan time.Duration, 1), c: make(chan time.Time)}
	s.newTimer = func(d time.Duration) (<-chan time.Time, func()) {
		m.armed <- d
		return m.c, func() {}
	}
	return m
}

// next waits until Watch arms its timer and returns the delay.
func (m *manualTimer) next(t *testing.T) time.Duration {
	t.Helper()
	select {
	case d := <-m.armed:
		return d
	case <-time.After(30 * time.Second):
		t.Fatal("Watch did not arm its timer")
		return 0
	}
}

// fire fires the armed timer and, once Watch has handled it (checked
// GitHub or not), returns the delay it armed next.
func (m *manualTimer) fire(t *testing.T) time.Duration {
	t.Helper()
	select {
	case m.c <- time.Now():
	case <-time.After(30 * time.Second):
		t.Fatal("Watch is not waiting on its timer")
	}
	return m.next(t)
}

func TestWatch(t *testing.T) {
	t.Parallel()
	h := newHarness(t, standardLibrary())
	s := h.source()
	timer := installTimer(s)
	first, err := s.Load(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *templates.Catalog, 10)
	ctx, cancel := contextWithCancel(t)
	done := make(chan error, 1)
	go func() { done <- s.Watch(ctx, func(c *templates.Catalog) { got <- c }) }()
	drained := func() []*templates.Catalog {
		var out []*templates.Catalog
		for {
			select {
			case c := <-got:
				out = append(out, c)
			default:
				return out
			}
		}
	}
	if d := timer.next(t); d != DefaultTTL {
		t.Errorf("first check armed %v ahead, want the TTL %v", d, DefaultTTL)
	}

	// A timer that fires before the deadline (the wall clock was set
	// back) checks nothing and waits for the rest.
	h.fake.Reset()
	h.clock.Add(DefaultTTL / 3)
	if d := timer.fire(t); d != DefaultTTL-DefaultTTL/3 || h.fake.Total() != 0 || len(drained()) != 0 {
		t.Errorf("early firing: %d requests, next in %v; want none, and the remaining %v", h.fake.Total(), d, DefaultTTL-DefaultTTL/3)
	}

	h.clock.Add(DefaultTTL - DefaultTTL/3)
	timer.fire(t)
	if c := h.costs(); c.Total != 1 || c.Status[http.StatusNotModified] != 1 || len(drained()) != 0 {
		t.Errorf("check after the TTL, nothing changed: %v; want one 304 and no callback", c)
	}

	h.fake.PutFile("templates/Generated_010.json", fakegithub.ValidTemplate("Generated_010", "new text {{subject}}"))
	h.clock.Add(DefaultTTL)
	timer.fire(t)
	cats := drained()
	if len(cats) != 1 || cats[0] == first || cats[0].Info().Revision != h.fake.Head() {
		t.Fatalf("check after a change: %d callbacks, want 1 with the new commit", len(cats))
	}

	h.fake.SetFault(503)
	h.clock.Add(DefaultTTL)
	timer.fire(t)
	if cats := drained(); len(cats) != 1 || cats[0].Stale() == nil {
		t.Errorf("check during an outage: %d callbacks, want 1 stale catalog", len(cats))
	}
	h.fake.SetFault(0)
	h.clock.Add(failureBackoff)
	timer.fire(t)
	if cats := drained(); len(cats) != 1 || cats[0].Stale() != nil {
		t.Errorf("check after recovery: %d callbacks, want 1 fresh catalog", len(cats))
	}

	cancel()
	if err := <-done; err != nil {
		t.Errorf("Watch returned %v, want nil", err)
	}
}

func TestWatchTiming(t *testing.T) {
	t.Parallel()
	// Each check is timed from what the previous one left: one TTL after a
	// success, at the retry time after a failure, whoever made the check.
	type step struct {
		name        string
		before      func(t *testing.T, h *harness, s *Source) // may move the clock itself
		advance     time.Duration                             // then the clock moves and the timer fires
		wantChecked bool                                      // a request reached GitHub
		wantNext    time.Duration                             // the delay armed afterwards
	}
	tests := []struct {
		name      string
		edit      func(*Config)
		prepare   func(t *testing.T, h *harness) // before the watched source starts
		wantFirst time.Duration
		steps     []step
	}{
		{
			name:      "unchanged revalidation: one TTL later",
			wantFirst: DefaultTTL,
			steps: []step{
				{name: "first check", advance: DefaultTTL, wantChecked: true, wantNext: DefaultTTL},
				{name: "second check", advance: DefaultTTL, wantChecked: true, wantNext: DefaultTTL},
			},
		},
		{
			name:      "outage without a retry time: after the backoff, not a TTL later",
			wantFirst: DefaultTTL,
			steps: []step{
				{name: "GitHub fails", before: func(_ *testing.T, h *harness, _ *Source) { h.fake.SetFault(503) },
					advance: DefaultTTL, wantChecked: true, wantNext: failureBackoff},
				{name: "still failing", advance: failureBackoff, wantChecked: true, wantNext: failureBackoff},
				{name: "GitHub is back", before: func(_ *testing.T, h *harness, _ *Source) { h.fake.SetFault(0) },
					advance: failureBackoff, wantChecked: true, wantNext: DefaultTTL},
			},
		},
		{
			name:      "rate limited: at the reset",
			wantFirst: DefaultTTL,
			steps: []step{
				{name: "limit spent", before: func(_ *testing.T, h *harness, _ *Source) {
					// The reset is an hour after the check, which happens once
					// the clock has moved one TTL on.
					h.fake.SetRateLimited(h.clock.Now().Add(DefaultTTL + time.Hour))
				}, advance: DefaultTTL, wantChecked: true, wantNext: time.Hour},
			},
		},
		{
			name:      "a refresh between checks moves the next one",
			wantFirst: DefaultTTL,
			steps: []step{
				{name: "refreshed a third of the way", before: func(t *testing.T, h *harness, s *Source) {
					h.clock.Add(DefaultTTL / 3)
					if _, err := s.Refresh(ctxT(t)); err != nil {
						t.Fatal(err)
					}
				}, advance: DefaultTTL - DefaultTTL/3, wantChecked: false, wantNext: DefaultTTL / 3},
				{name: "one TTL after the refresh", advance: DefaultTTL / 3, wantChecked: true, wantNext: DefaultTTL},
			},
		},
		{
			name: "restart on the disk cache: when the cached check expires",
			prepare: func(t *testing.T, h *harness) {
				if _, err := h.source().Load(ctxT(t)); err != nil {
					t.Fatal(err)
				}
				h.clock.Add(DefaultTTL / 4)
			},
			wantFirst: DefaultTTL - DefaultTTL/4,
			steps: []step{
				{name: "cached check expires", advance: DefaultTTL - DefaultTTL/4, wantChecked: true, wantNext: DefaultTTL},
			},
		},
		{
			name:      "a tiny TTL is not a busy loop",
			edit:      func(c *Config) { c.TTL = 200 * time.Millisecond },
			wantFirst: minWatchInterval,
			steps: []step{
				{name: "check", advance: minWatchInterval, wantChecked: true, wantNext: minWatchInterval},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, standardLibrary())
			if tt.prepare != nil {
				tt.prepare(t, h)
			}
			edit := func(*Config) {}
			if tt.edit != nil {
				edit = tt.edit
			}
			s := h.source(edit)
			timer := installTimer(s)
			if _, err := s.Load(ctxT(t)); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := contextWithCancel(t)
			done := make(chan error, 1)
			go func() { done <- s.Watch(ctx, func(*templates.Catalog) {}) }()
			if d := timer.next(t); d != tt.wantFirst {
				t.Errorf("first check armed %v ahead, want %v", d, tt.wantFirst)
			}
			for _, st := range tt.steps {
				if st.before != nil {
					st.before(t, h, s)
				}
				h.fake.Reset()
				h.clock.Add(st.advance)
				next := timer.fire(t)
				if checked := h.fake.Total() > 0; checked != st.wantChecked {
					t.Errorf("%s: checked GitHub = %v, want %v (%v)", st.name, checked, st.wantChecked, h.costs())
				}
				if next != st.wantNext {
					t.Errorf("%s: next check armed %v ahead, want %v", st.name, next, st.wantNext)
				}
			}
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Watch returned %v, want nil", err)
			}
		})
	}
}

func TestWatchCatchesUp(t *testing.T) {
	t.Parallel()
	// A change found by a background revalidation before Watch started
	// reaches the watcher at once, not a TTL later.
	h := newHarness(t, standardLibrary())
	s := h.source()
	s.newTimer = func(time.Duration) (<-chan time.Time, func()) { return nil, func() {} }
	bg := watchBackground(s)
	first, _ := s.Load(ctxT(t))
	h.fake.PutFile("templates/Generated_020.json", fakegithub.ValidTemplate("Generated_020", "v2 {{subject}}"))
	h.clock.Add(DefaultTTL + time.Second)
	if got, _ := s.Load(ctxT(t)); got != first {
		t.Fatal("Load did not return the current catalog")
	}
	waitFor(t, bg, "background revalidation")

	got := make(chan *templates.Catalog, 1)
	ctx, cancel := contextWithCancel(t)
	defer cancel()
	go s.Watch(ctx, func(c *templates.Catalog) { got <- c })
	select {
	case c := <-got:
		if c.Info().Revision != h.fake.Head() {
			t.Errorf("caught-up catalog at %s, want %s", c.Info().Revision, h.fake.Head())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Watch did not hand over the newer catalog")
	}
}

func TestLibraryIntegration(t *testing.T) {
	t.Parallel()
	// templates.Library installs what Watch hands it; staleness must reach
	// the catalog handlers read.
	h := newHarness(t, standardLibrary())
	s := h.source()
	timer := installTimer(s)
	lib := templates.NewLibrary(s, s.logger)
	if err := lib.Load(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := contextWithCancel(t)
	defer cancel()
	go lib.Run(ctx)
	timer.next(t)
	h.fake.SetFault(500)
	h.clock.Add(DefaultTTL + time.Second)
	timer.fire(t)
	if st := lib.Catalog().Stale(); st == nil || st.Code != fault.NetworkError {
		t.Errorf("library catalog staleness = %+v, want NETWORK_ERROR", st)
	}
	if lib.Catalog().Len() != len(h.lib.Valid) {
		t.Errorf("library serves %d templates, want %d", lib.Catalog().Len(), len(h.lib.Valid))
	}
}

func TestConcurrentColdLoads(t *testing.T) {
	t.Parallel()
	// Concurrent first requests share one sync.
	h := newHarness(t, standardLibrary())
	s := h.source()
	errs := make(chan error, 10)
	for range 10 {
		go func() {
			_, err := s.Load(ctxT(t))
			errs <- err
		}()
	}
	for range 10 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := h.fake.Count(fakegithub.RouteTree); n != 1 {
		t.Errorf("10 concurrent cold Loads listed the tree %d times, want 1", n)
	}
	if n, d, b := h.fake.Count(fakegithub.RouteTarball), h.fake.Downloads(), h.fake.Count(fakegithub.RouteBlob); n != 1 || d != 1 || b != 0 {
		t.Errorf("10 concurrent cold Loads asked for the archive %d times, downloaded it %d times and fetched %d blobs; want one archive", n, d, b)
	}
}

func TestDefaultBranchChanges(t *testing.T) {
	t.Parallel()
	// With GITHUB_REF unset the source follows the default branch, asked
	// as HEAD: renaming it costs nothing, and making another branch the
	// default is noticed at the next check, like a push.
	tests := []struct {
		name        string
		change      func(h *harness) (newHead string)
		wantBranch  string
		wantRebuilt bool
		wantCosts   map[string]int
	}{
		{name: "renamed", change: func(h *harness) string {
			h.fake.RenameBranch("main", "trunk")
			return h.fake.Head()
		}, wantBranch: "trunk", wantCosts: map[string]int{"commit": 1}},
		{name: "another branch made the default", change: func(h *harness) string {
			before := h.fake.Head()
			develop := h.fake.PutFile("templates/Develop_Only.json", fakegithub.ValidTemplate("Develop_Only", "dev {{subject}}"))
			h.fake.SetBranch("develop", develop)
			h.fake.SetBranch("main", before)
			h.fake.SetDefaultBranch("develop")
			return develop
		}, wantBranch: "develop", wantRebuilt: true, wantCosts: map[string]int{"commit": 1, "tree": 1, "blob": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, standardLibrary())
			s := h.source(func(c *Config) { c.Ref = "" })
			before, err := s.Load(ctxT(t))
			if err != nil {
				t.Fatal(err)
			}
			head := tt.change(h)
			h.fake.Reset()
			h.clock.Add(DefaultTTL + time.Second)
			cat, err := s.Refresh(ctxT(t))
			if err != nil || cat.Stale() != nil {
				t.Fatalf("Refresh after the default branch %s: %v", tt.name, err)
			}
			c := h.costs()
			t.Logf("revalidation after the default branch was %s: %v", tt.name, c)
			if diff := cmp.Diff(tt.wantCosts, c.ByRoute); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			if tt.name == "renamed" && c.Status[http.StatusNotModified] != 1 {
				t.Errorf("the same commit under a new branch name cost %v, want one 304", c)
			}
			if rebuilt := cat != before; rebuilt != tt.wantRebuilt || cat.Info().Revision != head {
				t.Errorf("catalog rebuilt %v at %s, want rebuilt %v at %s", rebuilt, cat.Info().Revision, tt.wantRebuilt, head)
			}
			if _, ok := cat.Lookup("Develop_Only"); ok != tt.wantRebuilt {
				t.Errorf("Develop_Only in the catalog: %v, want %v", ok, tt.wantRebuilt)
			}
			// check names the branch HEAD is today.
			r, err := s.Check(ctxT(t))
			if err != nil || r.Branch != tt.wantBranch || !strings.Contains(r.String(), "default branch "+tt.wantBranch+" -> "+head) {
				t.Errorf("check = %+v, %v; want the default branch %s at %s", r, err, tt.wantBranch, head)
			}
		})
	}
}

func TestStalenessReasonChanges(t *testing.T) {
	t.Parallel()
	h := newHarness(t, standardLibrary())
	s := h.source()
	var notified []*templates.Catalog
	s.mu.Lock()
	s.subs[0] = func(c *templates.Catalog) { notified = append(notified, c) }
	s.mu.Unlock()
	if _, err := s.Load(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	notified = nil
	steps := []struct {
		fail       func()
		wantCode   string
		wantNotify int
	}{
		{func() { h.fake.SetFault(500) }, fault.NetworkError, 1},
		{func() {}, fault.NetworkError, 1}, // same reason: nothing new to tell
		{func() { h.fake.SetFault(0); h.fake.SetToken("ghp_revoked000000000000000000000000000000") }, fault.GitHubAuthFailed, 2},
	}
	var since time.Time
	for i, st := range steps {
		st.fail()
		h.clock.Add(time.Minute)
		cat, _ := s.Refresh(ctxT(t))
		if cat.Stale() == nil || cat.Stale().Code != st.wantCode || len(notified) != st.wantNotify {
			t.Fatalf("step %d: stale %+v, %d notifications; want %s and %d", i, cat.Stale(), len(notified), st.wantCode, st.wantNotify)
		}
		if i == 0 {
			since = cat.Stale().Since
		} else if !cat.Stale().Since.Equal(since) {
			t.Errorf("step %d: since moved from %v to %v within one outage", i, since, cat.Stale().Since)
		}
	}
	if notified[1].Stale().Code != fault.GitHubAuthFailed {
		t.Errorf("watchers were not told the new reason: %+v", notified[1].Stale())
	}
}

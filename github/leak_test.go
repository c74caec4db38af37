package github

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowyprompt/flowyprompt/cache"
	"github.com/flowyprompt/flowyprompt/internal/fault"
)

// echoTransport plays a misbehaving proxy that repeats the request's
// Authorization header and a token-bearing URL back in what it answers.
type echoTransport struct{ mode string }

func (e echoTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	auth := r.Header.Get("Authorization")
	u := *r.URL
	u.RawQuery = "access_token=" + testToken
	switch e.mode {
	case "error":
		return nil, fmt.Errorf("proxy refused %q for %s", auth, u.String())
	default:
		body := fmt.Sprintf(`{"message":"bad request with %s from %s"}`, auth, u.String())
		req := r.Clone(r.Context())
		req.URL = &u
		return &http.Response{
			StatusCode: http.StatusBadRequest,
			Header:     http.Header{"Content-Type": {"application/json"}},
			Body:       io.NopCloser(strings.NewReader(body)),
			Request:    req,
		}, nil
	}
}

func TestTokenNeverLeaks(t *testing.T) {
	t.Parallel()
	h := newHarness(t, standardLibrary())
	s := h.source()
	ctx := ctxT(t)
	var outputs []string
	record := func(what string, v any) {
		switch x := v.(type) {
		case nil:
		case error:
			outputs = append(outputs, what+": "+x.Error(), fmt.Sprintf("%s: %+v %#v", what, x, x))
			if f := fault.As(x); f != nil {
				b, _ := json.Marshal(map[string]any{"what": f.What, "why": f.Why, "how": f.How, "details": f.Details, "err": fmt.Sprint(f.Err)})
				outputs = append(outputs, string(b))
			}
		default:
			b, err := json.Marshal(x)
			if err != nil {
				t.Fatal(err)
			}
			outputs = append(outputs, what+": "+string(b), fmt.Sprint(x))
		}
	}

	cfg := h.config()
	cfg.RepoURL = "https://x:" + testToken + "@github.com/acme/prompts?access_token=" + testToken
	outputs = append(outputs, fmt.Sprintf("%v %+v %#v %s", cfg, cfg, cfg, cfg))
	cfg.Logger.Info("config", "cfg", cfg)
	record("bad config", cfg.Validate())

	cat, err := s.Load(ctx)
	record("cold load", err)
	record("info", cat.Info())

	faults := []struct {
		name string
		on   func()
		off  func()
	}{
		{"500", func() { h.fake.SetFault(500) }, func() { h.fake.SetFault(0) }},
		{"down", func() { h.fake.SetDown(true) }, func() { h.fake.SetDown(false) }},
		{"token refused", func() { h.fake.SetToken("ghp_other0000000000000000000000000000000") }, func() { h.fake.SetToken(testToken) }},
		{"rate limited", func() { h.fake.SetRateLimited(time.Now().Add(time.Hour)) }, func() {}},
	}
	for _, f := range faults {
		f.on()
		h.clock.Add(DefaultTTL + time.Second)
		c, err := s.Refresh(ctx)
		record(f.name, err)
		if c != nil {
			record(f.name+" staleness", c.Stale())
		}
		report, err := s.Check(ctx)
		record(f.name+" check", err)
		if report != nil {
			record(f.name+" report", report)
			outputs = append(outputs, report.String())
		}
		f.off()
	}

	// Errors that carry URLs and echoed headers.
	for _, mode := range []string{"body", "error"} {
		c := h.client(func(c *Config) { c.HTTPClient = &http.Client{Transport: echoTransport{mode}} })
		_, _, _, err := c.ResolveRef(ctx, "main", "")
		if err == nil {
			t.Fatalf("%s: echo transport did not fail", mode)
		}
		record("echo "+mode, err)
		_, _, _, err = c.treeFiles(ctx, strings.Repeat("a", 40))
		record("echo tree "+mode, err)
		_, _, err = c.putFile(ctx, "templates/X.json", []byte("{}"), "msg", "", "")
		record("echo save "+mode, err)
		_, err = c.Archive(ctx, strings.Repeat("a", 40), archiveFilter{maxFileSize: DefaultMaxFileSize, maxBytes: 1 << 20})
		if err == nil {
			t.Fatalf("%s: echo transport did not fail the archive", mode)
		}
		record("echo archive "+mode, err)
	}
	// A source without a catalog returns the raw fault to its caller.
	cold := h.source(func(c *Config) {
		c.CacheDir = t.TempDir()
		c.HTTPClient = &http.Client{Transport: echoTransport{"body"}}
	})
	_, err = cold.Load(ctx)
	record("cold echo", err)

	// The captured record must contain what it claims: make sure the
	// echoing really happened, so the test cannot pass vacuously.
	raw := echoTransport{"body"}
	resp, _ := raw.RoundTrip(mustRequest(t, testToken))
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), testToken) {
		t.Fatal("echo transport does not echo the token; the test would prove nothing")
	}

	var files []string
	filepath.WalkDir(h.cacheDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
			outputs = append(outputs, cacheFileTexts(t, p)...)
		}
		return nil
	})
	if len(files) == 0 {
		t.Fatal("no cache file written; nothing was checked on disk")
	}
	// Values are base64 in the file: make sure they were read decoded, so
	// that the scan below would see a token inside one.
	known, ok := cat.Lookup(h.lib.Valid[0])
	if !ok || len(known.Raw) == 0 {
		t.Fatalf("template %s not loaded", h.lib.Valid[0])
	}
	if !slices.ContainsFunc(outputs, func(o string) bool { return strings.Contains(o, string(known.Raw)) }) {
		t.Fatal("no template found decoded in the cache files; the scan would not see a token in a cached value")
	}
	outputs = append(outputs, "logs: "+h.logs.String())

	secretTail := testToken[len("ghp_"):]
	for _, o := range outputs {
		if strings.Contains(o, secretTail) || strings.Contains(o, "access_token=ghp") {
			i := strings.Index(o, secretTail)
			t.Errorf("token leaked: ...%s...", o[max(0, i-200):min(len(o), i+100)])
		}
	}
	t.Logf("checked %d outputs (errors, reports, staleness, %d cache files, %d bytes of logs)", len(outputs), len(files), len(h.logs.String()))
}

func mustRequest(t *testing.T, token string) *http.Request {
	t.Helper()
	r, err := http.NewRequest(http.MethodGet, "https://api.github.com/repos/acme/prompts", nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Authorization", "Bearer "+token)
	return r
}

// cacheFileTexts returns what a cache file holds, as text to scan for the
// token: the file as written, and each entry's key, ETag and value decoded
// (values are []byte, so base64 in the file, where a search of the raw
// text could never find the token).
func cacheFileTexts(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	c, err := cache.Open(path, cache.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil || logs.Len() > 0 {
		t.Fatalf("cannot read the cache file %s: %v %s", path, err, logs.String())
	}
	out := []string{"file " + path + ": " + string(raw)}
	keys := c.Keys("")
	if len(keys) == 0 {
		t.Fatalf("the cache file %s holds no entry", path)
	}
	for _, k := range keys {
		e, _ := c.Peek(k)
		out = append(out, fmt.Sprintf("entry %s (ETag %s): %s", e.Key, e.ETag, e.Value))
	}
	return out
}

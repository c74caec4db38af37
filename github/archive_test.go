package github

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/flowyprompt/flowyprompt/internal/fakegithub"
	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/render"
	"github.com/flowyprompt/flowyprompt/templates"
)

// entrySummary is what a client can observe of one template.
type entrySummary struct {
	Path, Digest, Raw, Rendered string
	Template                    *templates.Template
}

// summarize describes a catalog for comparison: every template, rendered,
// and every invalid file with its error code.
func summarize(t *testing.T, cat *templates.Catalog) (map[string]entrySummary, map[string]string) {
	t.Helper()
	valid := map[string]entrySummary{}
	for _, e := range cat.Templates() {
		// A value for every variable, whichever the generator declared.
		vars := map[string]string{}
		for _, v := range e.Template.Variables {
			vars[v.Name] = "value of " + v.Name
		}
		text, err := render.Prompt(e.Template, vars)
		if err != nil {
			t.Fatalf("render %s: %v", e.Template.Metadata.Name, err)
		}
		valid[e.Template.Metadata.Name] = entrySummary{Path: e.Path, Digest: e.Digest, Raw: string(e.Raw), Rendered: text, Template: e.Template}
	}
	invalid := map[string]string{}
	for _, inv := range cat.Invalid() {
		invalid[inv.Path] = fault.CodeOf(inv.Err)
	}
	return valid, invalid
}

// TestArchiveLargeLibrary is not parallel: it loads 2,000 templates three
// times and spends CPU, not waits, so it runs alone before the parallel
// tests rather than squeeze their time bounds.
func TestArchiveLargeLibrary(t *testing.T) {
	lib := fakegithub.GenerateLibrary(fakegithub.LibraryOptions{Valid: 1990, Invalid: 6, Oversized: 4, TemplateBytes: 4096})
	total := 0
	for _, name := range lib.Valid {
		b := lib.Files["templates/"+name+".json"]
		total += len(b)
		if n := bytes.Count(b, []byte("{{")); n < 50 {
			t.Fatalf("%s has %d placeholders, want a placeholder-dense template", name, n)
		}
	}
	if avg := total / len(lib.Valid); avg < 3800 || avg > 4400 {
		t.Fatalf("generated templates average %d bytes, want about 4 KB", avg)
	}
	h := newHarness(t, lib)

	// Cold start: the ref, the tree, one archive.
	s := h.source()
	cat, err := s.Load(ctxT(t))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	c := h.costs()
	t.Logf("cold start, %d templates of ~4 KB from the archive: %v, %d download", len(lib.Valid)+len(lib.Invalid)+len(lib.Oversized), c, h.fake.Downloads())
	if diff := cmp.Diff(map[string]int{"commit": 1, "tree": 1, "tarball": 1}, c.ByRoute); diff != "" || c.Total > 3 {
		t.Errorf("cold start cost %v; want at most 3 requests (-want +got):\n%s", c, diff)
	}
	if n := h.fake.Downloads(); n != 1 {
		t.Errorf("%d archive downloads, want 1", n)
	}
	for _, d := range h.fake.DownloadRequests() {
		if d.Authorized {
			t.Errorf("the archive download sent an Authorization header")
		}
	}

	// The same repository read one blob at a time gives the same catalog.
	h.fake.Reset()
	perBlob := h.source(func(c *Config) { c.CacheDir = t.TempDir() })
	perBlob.noArchive = true
	want, err := perBlob.Load(ctxT(t))
	if err != nil {
		t.Fatalf("per-blob Load: %v", err)
	}
	if n := h.fake.Count(fakegithub.RouteBlob); n != len(lib.Valid)+len(lib.Invalid) || h.fake.Downloads() != 0 {
		t.Errorf("per-blob load fetched %d blobs and %d archives, want %d blobs", n, h.fake.Downloads(), len(lib.Valid)+len(lib.Invalid))
	}
	wantValid, wantInvalid := summarize(t, want)
	gotValid, gotInvalid := summarize(t, cat)
	if len(gotValid) != len(lib.Valid) {
		t.Errorf("archive catalog has %d templates, want %d", len(gotValid), len(lib.Valid))
	}
	if diff := cmp.Diff(wantValid, gotValid, cmpopts.IgnoreUnexported(templates.Template{})); diff != "" {
		t.Errorf("templates from the archive differ from the per-blob ones (-blobs +archive):\n%s", diff)
	}
	if diff := cmp.Diff(wantInvalid, gotInvalid); diff != "" {
		t.Errorf("invalid files from the archive differ from the per-blob ones (-blobs +archive):\n%s", diff)
	}
	for _, p := range lib.Oversized {
		if gotInvalid[p] != fault.TemplateTooLarge {
			t.Errorf("%s reported %q, want TEMPLATE_TOO_LARGE", p, gotInvalid[p])
		}
	}

	// A commit changing one template: the ref, the tree, one blob.
	h.fake.Reset()
	changed := fakegithub.ValidTemplate("Generated_007", "Changed: {{subject}} in one commit.")
	h.fake.PutFile("templates/Generated_007.json", changed)
	h.clock.Add(DefaultTTL + time.Second)
	after, err := s.Refresh(ctxT(t))
	if err != nil {
		t.Fatalf("Refresh: %v", err)
	}
	c = h.costs()
	t.Logf("one changed template in a %d-template library: %v", len(lib.Valid), c)
	if diff := cmp.Diff(map[string]int{"commit": 1, "tree": 1, "blob": 1}, c.ByRoute); diff != "" || c.Total > 3 || h.fake.Downloads() != 0 {
		t.Errorf("one-file change cost %v and %d downloads; want at most 3 requests (-want +got):\n%s", c, h.fake.Downloads(), diff)
	}
	if e, ok := after.Lookup("Generated_007"); !ok || !bytes.Equal(e.Raw, changed) {
		t.Errorf("Generated_007 after the change = %v; want the new content", ok)
	}
	if after.Len() != cat.Len() {
		t.Errorf("after the change %d templates, want %d", after.Len(), cat.Len())
	}

	// Nothing changed: one 304.
	h.fake.Reset()
	h.clock.Add(DefaultTTL + time.Second)
	if _, err := s.Refresh(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if c := h.costs(); c.Total != 1 || c.Status[http.StatusNotModified] != 1 {
		t.Errorf("unchanged revalidation cost %v, want one 304", c)
	}
}

func TestArchiveContent(t *testing.T) {
	t.Parallel()
	lib := fakegithub.GenerateLibrary(fakegithub.LibraryOptions{Valid: 12, Oversized: 2})
	lib.Files["templates/.drafts/Hidden.json"] = fakegithub.ValidTemplate("Hidden", "draft {{subject}}")
	lib.Files["templates/team/Nested.json"] = fakegithub.ValidTemplate("Nested", "nested {{subject}}")
	wantNames := slices.Sorted(slices.Values(append(slices.Clone(lib.Valid), "Nested")))
	fetched := len(lib.Valid) + 1
	target := "templates/Generated_003.json"
	tests := []struct {
		name      string
		setup     func(f *fakegithub.Server)
		wantBlobs []string // paths fetched one by one, when known
		someBlobs bool     // the archive failed: some or all blobs fetched one by one
		wantWarn  string
	}{
		{name: "archive as committed"},
		{
			name:      "content differs from the blob (export-subst)",
			setup:     func(f *fakegithub.Server) { f.SetArchiveContent(target, []byte(`{"metadata": "substituted"}`)) },
			wantBlobs: []string{target},
			wantWarn:  "differ from the commit",
		},
		{
			name: "same size, other bytes",
			setup: func(f *fakegithub.Server) {
				b := slices.Clone(lib.Files[target])
				b[len(b)-3] ^= 1
				f.SetArchiveContent(target, b)
			},
			wantBlobs: []string{target},
			wantWarn:  "differ from the commit",
		},
		{
			name: "over the size limit in the archive only",
			setup: func(f *fakegithub.Server) {
				f.SetArchiveContent(target, bytes.Repeat([]byte("x"), DefaultMaxFileSize+10))
			},
			wantBlobs: []string{target},
			wantWarn:  "differ from the commit",
		},
		{
			name:      "left out of the archive (export-ignore)",
			setup:     func(f *fakegithub.Server) { f.SetArchiveContent(target, nil) },
			wantBlobs: []string{target},
		},
		{
			name:      "download refused",
			setup:     func(f *fakegithub.Server) { f.SetDownloadFault(http.StatusServiceUnavailable) },
			wantBlobs: nil, someBlobs: true, wantWarn: "cannot use the repository archive",
		},
		{
			name:      "download dropped",
			setup:     func(f *fakegithub.Server) { f.SetDownloadFault(fakegithub.FaultDrop) },
			someBlobs: true, wantWarn: "cannot use the repository archive",
		},
		{
			name:      "download cut short",
			setup:     func(f *fakegithub.Server) { f.SetDownloadCut(700) },
			someBlobs: true, wantWarn: "cannot use the repository archive",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, lib)
			if tt.setup != nil {
				tt.setup(h.fake)
			}
			s := h.source()
			cat, err := s.Load(ctxT(t))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if diff := cmp.Diff(wantNames, names(cat)); diff != "" {
				t.Errorf("templates (-want +got):\n%s", diff)
			}
			if e, ok := cat.Lookup("Generated_003"); !ok || !bytes.Equal(e.Raw, lib.Files[target]) {
				t.Errorf("Generated_003 = %v; want the committed content", ok)
			}
			_, invalid := summarize(t, cat)
			if diff := cmp.Diff(map[string]string{
				lib.Oversized[0]: fault.TemplateTooLarge, lib.Oversized[1]: fault.TemplateTooLarge,
			}, invalid); diff != "" {
				t.Errorf("invalid files (-want +got):\n%s", diff)
			}
			var blobPaths []string
			byBlob := map[string]string{}
			for p, b := range lib.Files {
				byBlob["/repos/acme/prompts/git/blobs/"+fakegithub.BlobSHA(b)] = p
			}
			for _, r := range h.fake.Requests() {
				if r.Pattern == fakegithub.RouteBlob {
					blobPaths = append(blobPaths, byBlob[r.Path])
				}
			}
			slices.Sort(blobPaths)
			c := h.costs()
			t.Logf("%s: %v", tt.name, c)
			if tt.someBlobs {
				if len(blobPaths) == 0 || len(blobPaths) > fetched {
					t.Errorf("fetched %d blobs one by one after the archive failed, want between 1 and %d", len(blobPaths), fetched)
				}
			} else if diff := cmp.Diff(tt.wantBlobs, blobPaths); diff != "" {
				t.Errorf("blobs fetched one by one (-want +got):\n%s", diff)
			}
			if c.ByRoute["tarball"] != 1 {
				t.Errorf("archive asked %d times, want once", c.ByRoute["tarball"])
			}
			for _, p := range append(slices.Clone(lib.Oversized), "templates/.drafts/Hidden.json", "other/Outside.json", "templates/README.md") {
				if slices.Contains(blobPaths, p) {
					t.Errorf("%s was fetched", p)
				}
				if _, kept := s.cache.Peek(s.blobNS + fakegithub.BlobSHA(lib.Files[p])); kept {
					t.Errorf("%s was kept in the cache", p)
				}
			}
			warned := h.logs.count("WARN", "archive")
			switch {
			case tt.wantWarn == "" && warned != 0:
				t.Errorf("%d warnings about the archive, want none:\n%s", warned, h.logs.String())
			case tt.wantWarn != "" && h.logs.count("WARN", tt.wantWarn) != 1:
				t.Errorf("want one warning %q, logs:\n%s", tt.wantWarn, h.logs.String())
			}
		})
	}
}

func TestArchiveErrors(t *testing.T) {
	t.Parallel()
	lib := fakegithub.GenerateLibrary(fakegithub.LibraryOptions{Valid: 20})
	tests := []struct {
		name     string
		setup    func(f *fakegithub.Server)
		wantCode string
		wantErr  error
		retry    bool
	}{
		{name: "401", setup: func(f *fakegithub.Server) { f.SetRouteFault(fakegithub.RouteTarball, http.StatusUnauthorized) },
			wantCode: fault.GitHubAuthFailed, wantErr: ErrUnauthorized},
		{name: "403 forbidden", setup: func(f *fakegithub.Server) { f.SetRouteFault(fakegithub.RouteTarball, http.StatusForbidden) },
			wantCode: fault.GitHubAuthFailed, wantErr: ErrUnauthorized},
		// The rate limit runs out after the ref and the tree.
		{name: "403 rate limit", setup: func(f *fakegithub.Server) { f.SetRemaining(2) },
			wantCode: fault.GitHubRateLimited, wantErr: ErrRateLimited, retry: true},
		{name: "429", setup: func(f *fakegithub.Server) { f.SetRouteFault(fakegithub.RouteTarball, http.StatusTooManyRequests) },
			wantCode: fault.GitHubRateLimited, wantErr: ErrRateLimited, retry: true},
		{name: "404", setup: func(f *fakegithub.Server) { f.SetRouteFault(fakegithub.RouteTarball, http.StatusNotFound) },
			wantCode: fault.GitHubNotFound, wantErr: ErrNotFound},
		{name: "500", setup: func(f *fakegithub.Server) { f.SetRouteFault(fakegithub.RouteTarball, http.StatusInternalServerError) },
			wantCode: fault.NetworkError, wantErr: ErrUnavailable},
		{name: "dropped connection", setup: func(f *fakegithub.Server) { f.SetRouteFault(fakegithub.RouteTarball, fakegithub.FaultDrop) },
			wantCode: fault.NetworkError, wantErr: ErrUnavailable},
	}
	check := func(t *testing.T, h *harness, err error, tt int) {
		t.Helper()
		want := tests[tt]
		f := fault.As(err)
		if f == nil || f.Code != want.wantCode || !errors.Is(err, want.wantErr) {
			t.Fatalf("error = %v (code %s); want %s matching %v", err, fault.CodeOf(err), want.wantCode, want.wantErr)
		}
		if want.retry && f.RetryAfter <= 0 {
			t.Errorf("rate limit without a retry time: %+v", f)
		}
		if n := h.fake.Count(fakegithub.RouteBlob); n != 0 || h.fake.Downloads() != 0 {
			t.Errorf("after GitHub refused the archive: %d blobs, %d downloads; want none (the refusal is the answer)", n, h.fake.Downloads())
		}
		if s := fmt.Sprintf("%v %+v", err, f.Details); strings.Contains(s, testToken) {
			t.Errorf("the token leaked into the error: %s", s)
		}
	}
	for i, tt := range tests {
		t.Run(tt.name+"/cold start", func(t *testing.T) {
			h := newHarness(t, lib)
			tt.setup(h.fake)
			cat, err := h.source().Load(ctxT(t))
			if cat != nil {
				t.Errorf("Load returned a catalog with no source of templates")
			}
			check(t, h, err, i)
		})
		t.Run(tt.name+"/catalog held", func(t *testing.T) {
			h := newHarness(t, lib)
			s := h.source()
			first, err := s.Load(ctxT(t))
			if err != nil {
				t.Fatal(err)
			}
			changes := map[string][]byte{}
			for _, name := range lib.Valid[:10] {
				changes["templates/"+name+".json"] = fakegithub.ValidTemplate(name, "Rewritten {{subject}}")
			}
			h.fake.PutFiles(changes)
			h.fake.Reset()
			tt.setup(h.fake)
			h.clock.Add(DefaultTTL + time.Second)
			cat, err := s.Refresh(ctxT(t))
			check(t, h, err, i)
			if cat == nil || cat.Stale() == nil || cat.Stale().Code != tt.wantCode {
				t.Fatalf("catalog after the failure = %+v; want the held one, stale with %s", cat, tt.wantCode)
			}
			if diff := cmp.Diff(names(first), names(cat)); diff != "" {
				t.Errorf("stale catalog (-held +got):\n%s", diff)
			}
			if again, err := s.Load(ctxT(t)); err != nil || again.Stale() == nil {
				t.Errorf("Load after the failure = %v; want the stale catalog served", err)
			}
		})
	}
}

func TestArchiveTokenNeverLeaks(t *testing.T) {
	t.Parallel()
	lib := fakegithub.GenerateLibrary(fakegithub.LibraryOptions{Valid: 20, Invalid: 2})
	tests := []struct {
		name    string
		setup   func(f *fakegithub.Server)
		wantErr bool // the sync fails as a whole
	}{
		{name: "success", setup: func(*fakegithub.Server) {}},
		{name: "download refused", setup: func(f *fakegithub.Server) { f.SetDownloadFault(http.StatusNotFound) }},
		{name: "download dropped before answering", setup: func(f *fakegithub.Server) { f.SetDownloadFault(fakegithub.FaultDrop) }},
		{name: "download cut short", setup: func(f *fakegithub.Server) { f.SetDownloadCut(100) }},
		{name: "download and blobs fail", wantErr: true, setup: func(f *fakegithub.Server) {
			f.SetDownloadFault(fakegithub.FaultDrop)
			f.SetRouteFault(fakegithub.RouteBlob, http.StatusBadGateway)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, lib)
			tt.setup(h.fake)
			var seen []string // everything a user or a log could see
			cat, err := h.source().Load(ctxT(t))
			if (err != nil) != tt.wantErr {
				t.Fatalf("Load error = %v, want an error: %v", err, tt.wantErr)
			}
			if err != nil {
				f := fault.As(err)
				seen = append(seen, err.Error(), fmt.Sprintf("%+v", f))
			}
			if cat != nil {
				for _, inv := range cat.Invalid() {
					seen = append(seen, inv.Err.Error())
				}
				if st := cat.Stale(); st != nil {
					seen = append(seen, st.Reason)
				}
			}
			// The client's own answer, whatever the source made of it.
			f := archiveFilter{prefix: "templates/", want: map[string]TreeEntry{}, maxFileSize: DefaultMaxFileSize, maxBytes: 1 << 20}
			res, aerr := h.client().Archive(ctxT(t), h.fake.Head(), f)
			if aerr != nil {
				seen = append(seen, aerr.Error(), fmt.Sprintf("%+v", fault.As(aerr)))
				if tt.name == "success" {
					t.Errorf("Archive: %v", aerr)
				}
			} else if res.contents == nil {
				t.Errorf("Archive returned no result and no error")
			}
			seen = append(seen, h.logs.String())
			filepath.WalkDir(h.cacheDir, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					seen = append(seen, cacheFileTexts(t, p)...)
				}
				return nil
			})

			tokens := h.fake.ArchiveTokens()
			if len(tokens) < 2 {
				t.Fatalf("%d archive tokens handed out, want one per archive asked for", len(tokens))
			}
			all := strings.Join(seen, "\n")
			for _, tok := range tokens {
				if strings.Contains(all, tok) {
					t.Errorf("the temporary archive token leaked:\n%s", all)
				}
			}
			for _, leak := range []string{"_codeload", "token=", testToken} {
				if strings.Contains(all, leak) {
					t.Errorf("%q leaked:\n%s", leak, all)
				}
			}
			for _, d := range h.fake.DownloadRequests() {
				if d.Authorized {
					t.Error("an archive download carried an Authorization header")
				}
			}
		})
	}
}

// tarEntry is one entry of a test archive.
type tarEntry struct {
	name     string
	typeflag byte
	content  string
	link     string
}

func makeArchive(t testing.TB, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		typ := e.typeflag
		if typ == 0 {
			typ = tar.TypeReg
		}
		hdr := &tar.Header{Name: e.name, Typeflag: typ, Mode: 0o644, Linkname: e.link}
		if typ == tar.TypeXGlobalHeader {
			hdr = &tar.Header{Typeflag: typ, PAXRecords: map[string]string{"comment": "0123456789"}}
		}
		if typ == tar.TypeReg {
			hdr.Size = int64(len(e.content))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeReg {
			if _, err := io.WriteString(tw, e.content); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func entryFor(p, content string) TreeEntry {
	return TreeEntry{Path: p, SHA: gitBlobSHA([]byte(content)), Size: len(content)}
}

func TestReadArchive(t *testing.T) {
	t.Parallel()
	const root = "acme-prompts-0123456/"
	a, b := `{"a": 1}`, `{"b": 2}`
	want := func(entries ...TreeEntry) map[string]TreeEntry {
		m := map[string]TreeEntry{}
		for _, e := range entries {
			m[e.Path] = e
		}
		return m
	}
	// Zeros compress about a thousandfold; the tar reader reads through
	// the unwanted file to skip it.
	bomb := makeArchive(t, tarEntry{name: root + "other/zeros.bin", content: string(make([]byte, 8<<20))})
	full := makeArchive(t, tarEntry{name: root, typeflag: tar.TypeDir}, tarEntry{name: root + "templates/A.json", content: a},
		tarEntry{name: root + "templates/B.json", content: b})
	tests := []struct {
		name           string
		data           []byte
		prefix         string // default templates/
		want           map[string]TreeEntry
		maxBytes       int64
		wantKept       []string // contents kept
		wantMismatched []string
		wantErr        error // nil: none; errAny: some error
	}{
		{
			name: "keeps the wanted files under the folder",
			data: makeArchive(t,
				tarEntry{name: "pax_global_header", typeflag: tar.TypeXGlobalHeader},
				tarEntry{name: root, typeflag: tar.TypeDir},
				tarEntry{name: root + "templates/", typeflag: tar.TypeDir},
				tarEntry{name: root + "templates/A.json", content: a},
				tarEntry{name: root + "templates/sub/B.json", content: b},
				tarEntry{name: root + "templates/C.json", content: "not wanted"},
			),
			want:     want(entryFor("templates/A.json", a), entryFor("templates/sub/B.json", b)),
			wantKept: []string{a, b},
		},
		{
			name: "skips what lies elsewhere, links, hidden files and odd paths",
			data: makeArchive(t,
				tarEntry{name: root + "other/A.json", content: a},
				tarEntry{name: "templates/A.json", content: a}, // no top-level folder: other/templates/...
				tarEntry{name: root + "templates/L.json", typeflag: tar.TypeSymlink, link: "../secret"},
				tarEntry{name: root + "templates/.drafts/H.json", content: a},
				tarEntry{name: root + "templates/../templates/D.json", content: a},
				tarEntry{name: root + "templates//E.json", content: a},
				tarEntry{name: root + `templates\F.json`, content: a},
				tarEntry{name: root + "/templates/G.json", content: a},
			),
			want: want(entryFor("other/A.json", a), entryFor("templates/L.json", a), entryFor("templates/.drafts/H.json", a),
				entryFor("templates/D.json", a), entryFor("templates/E.json", a), entryFor("templates/F.json", a),
				entryFor("templates/G.json", a), entryFor("A.json", a)),
		},
		{
			name: "a different blob is not kept",
			data: makeArchive(t,
				tarEntry{name: root + "templates/A.json", content: `{"a": 9}`}, // same size, other bytes
				tarEntry{name: root + "templates/B.json", content: b + "  "},   // another size: left unread
			),
			want:           want(entryFor("templates/A.json", a), entryFor("templates/B.json", b)),
			wantMismatched: []string{"templates/A.json", "templates/B.json"},
		},
		{
			name:   "a hidden folder may hold the templates, not below it",
			prefix: ".github/prompts/",
			data: makeArchive(t,
				tarEntry{name: root + ".github/prompts/A.json", content: a},
				tarEntry{name: root + ".github/prompts/.old/B.json", content: b},
			),
			want:     want(entryFor(".github/prompts/A.json", a), entryFor(".github/prompts/.old/B.json", b)),
			wantKept: []string{a},
		},
		{
			name:           "a file over the size limit is left unread",
			data:           makeArchive(t, tarEntry{name: root + "templates/A.json", content: strings.Repeat("x", 100)}),
			want:           want(entryFor("templates/A.json", strings.Repeat("x", 100))),
			wantMismatched: []string{"templates/A.json"},
		},
		{
			name:     "one blob at two paths is kept once",
			data:     makeArchive(t, tarEntry{name: root + "templates/A.json", content: a}, tarEntry{name: root + "templates/A2.json", content: a}),
			want:     want(entryFor("templates/A.json", a), entryFor("templates/A2.json", a)),
			wantKept: []string{a},
		},
		{
			name:     "a cut archive keeps what came before the cut",
			data:     full[:len(full)-20],
			want:     want(entryFor("templates/A.json", a), entryFor("templates/B.json", b)),
			wantKept: []string{a},
			wantErr:  errAny,
		},
		{name: "not gzip", data: []byte("<html>rate limited</html>"), want: want(entryFor("templates/A.json", a)), wantErr: errAny},
		{name: "empty", data: nil, want: want(entryFor("templates/A.json", a)), wantErr: errAny},
		{name: "gzip, not tar", data: gzipped("hello, not a tar archive"), wantErr: errAny},
		{name: "decompression bomb", data: bomb, maxBytes: 1 << 20, wantErr: errArchiveTooLarge},
		{name: "compressed stream over the bound", data: full, maxBytes: int64(len(full)) - 10, wantErr: errArchiveTooLarge},
		{name: "within the bound", data: full, maxBytes: 10240, want: want(entryFor("templates/A.json", a)), wantKept: []string{a}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			maxBytes := tt.maxBytes
			if maxBytes == 0 {
				maxBytes = 1 << 20
			}
			prefix := tt.prefix
			if prefix == "" {
				prefix = "templates/"
			}
			f := archiveFilter{prefix: prefix, want: tt.want, maxFileSize: 64, maxBytes: maxBytes}
			res, err := readArchive(bytes.NewReader(tt.data), f)
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("readArchive: %v", err)
			case tt.wantErr == errAny && err == nil, tt.wantErr != nil && tt.wantErr != errAny && !errors.Is(err, tt.wantErr):
				t.Fatalf("readArchive error = %v, want %v", err, tt.wantErr)
			}
			var kept []string
			for sha, content := range res.contents {
				if gitBlobSHA(content) != sha {
					t.Errorf("content kept under %s is not that blob", sha)
				}
				kept = append(kept, string(content))
			}
			slices.Sort(kept)
			if diff := cmp.Diff(tt.wantKept, kept); diff != "" {
				t.Errorf("kept (-want +got):\n%s", diff)
			}
			slices.Sort(res.mismatched)
			if diff := cmp.Diff(tt.wantMismatched, res.mismatched); diff != "" {
				t.Errorf("mismatched (-want +got):\n%s", diff)
			}
			if res.read > maxBytes {
				t.Errorf("read %d bytes past the bound of %d", res.read, maxBytes)
			}
		})
	}
}

func gzipped(s string) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	io.WriteString(zw, s)
	zw.Close()
	return buf.Bytes()
}

// errAny in a test table accepts any error.
var errAny = errors.New("any error")

func TestUseArchive(t *testing.T) {
	t.Parallel()
	tests := []struct {
		missing int
		size    int64
		want    bool
	}{
		{missing: 1, size: 1 << 10, want: false},
		{missing: archiveMinBlobs, size: 1 << 10, want: false}, // one parallel round of blob requests
		{missing: archiveMinBlobs + 1, size: 1 << 10, want: true},
		{missing: 2000, size: 20 << 20, want: true},
		{missing: 2000, size: 0, want: false},                    // a truncated listing bounds nothing
		{missing: 10, size: 11 << 20, want: false},               // a large repository for a few files
		{missing: 100000, size: archiveMaxSize + 1, want: false}, // past any bound
		{missing: archiveMaxSize / archiveBytesPerBlob, size: archiveMaxSize, want: true},
	}
	for _, tt := range tests {
		if got := useArchive(tt.missing, tt.size); got != tt.want {
			t.Errorf("useArchive(%d missing, %d bytes) = %v, want %v", tt.missing, tt.size, got, tt.want)
		}
	}
}

func TestTarSizeBoundsTheFakeArchive(t *testing.T) {
	t.Parallel()
	// The bound derived from the listing holds GitHub's layout: the fake
	// writes it like GitHub, long paths and all.
	lib := fakegithub.GenerateLibrary(fakegithub.LibraryOptions{Valid: 30, TemplateBytes: 2000})
	lib.Files["templates/"+strings.Repeat("very-long-folder-name/", 8)+"Deep.json"] = fakegithub.ValidTemplate("Deep", "{{subject}}")
	h := newHarness(t, lib)
	c := h.client()
	_, _, size, err := c.treeFiles(ctxT(t), h.fake.Head())
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Archive(ctxT(t), h.fake.Head(), archiveFilter{prefix: "templates/", want: map[string]TreeEntry{}, maxFileSize: DefaultMaxFileSize, maxBytes: size})
	if err != nil {
		t.Fatalf("Archive within the listing's bound of %d bytes: %v", size, err)
	}
	if res.read == 0 || res.read > size || size > 2*res.read+2<<20 {
		t.Errorf("archive of %d bytes, bound %d: want a bound above it and not far off", res.read, size)
	}
}

func FuzzArchiveRead(f *testing.F) {
	a := `{"a": 1}`
	valid := makeArchive(f, tarEntry{name: "r/templates/A.json", content: a}, tarEntry{name: "r/templates/B.json", content: "bb"},
		tarEntry{name: "r/templates/L.json", typeflag: tar.TypeSymlink, link: "A.json"})
	f.Add(valid)
	f.Add(valid[:len(valid)/2])
	f.Add([]byte{})
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
	const maxBytes, maxFileSize = 4096, 64
	want := map[string]TreeEntry{"templates/A.json": entryFor("templates/A.json", a), "templates/B.json": entryFor("templates/B.json", "bb")}
	f.Fuzz(func(t *testing.T, data []byte) {
		in := &countingReader{r: bytes.NewReader(data)}
		res, _ := readArchive(in, archiveFilter{prefix: "templates/", want: want, maxFileSize: maxFileSize, maxBytes: maxBytes})
		if in.n > maxBytes+1 {
			t.Errorf("read %d compressed bytes, bound %d", in.n, maxBytes)
		}
		if res.read > maxBytes {
			t.Errorf("read %d decompressed bytes, bound %d", res.read, maxBytes)
		}
		for sha, content := range res.contents {
			if gitBlobSHA(content) != sha || len(content) > maxFileSize {
				t.Errorf("kept %d bytes under %s that are not that wanted blob", len(content), sha)
			}
			if sha != want["templates/A.json"].SHA && sha != want["templates/B.json"].SHA {
				t.Errorf("kept a blob nobody wanted: %s", sha)
			}
		}
	})
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func TestColdStartThreshold(t *testing.T) {
	t.Parallel()
	tests := []struct {
		templates int
		want      map[string]int
	}{
		{templates: 1, want: map[string]int{"commit": 1, "tree": 1, "blob": 1}},
		{templates: archiveMinBlobs, want: map[string]int{"commit": 1, "tree": 1, "blob": archiveMinBlobs}},
		{templates: archiveMinBlobs + 1, want: map[string]int{"commit": 1, "tree": 1, "tarball": 1}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.templates), func(t *testing.T) {
			h := newHarness(t, fakegithub.GenerateLibrary(fakegithub.LibraryOptions{Valid: tt.templates}))
			cat, err := h.source().Load(ctxT(t))
			if err != nil || cat.Len() != tt.templates {
				t.Fatalf("Load = %v templates, %v; want %d", cat, err, tt.templates)
			}
			c := h.costs()
			t.Logf("cold start, %d templates: %v", tt.templates, c)
			if diff := cmp.Diff(tt.want, c.ByRoute); diff != "" {
				t.Errorf("requests by route (-want +got):\n%s", diff)
			}
		})
	}
}

func TestArchiveErrorRedaction(t *testing.T) {
	t.Parallel()
	// Shapes an error about the download may take; each names the URL or
	// its token, and none may survive the mapping.
	const tok = "Xq7ZtempTokenValue0123456789"
	link := "https://codeload.github.com/acme/prompts/legacy.tar.gz/" + strings.Repeat("a", 40) + "?token=" + tok
	tests := []struct {
		name string
		err  error
	}{
		{"url.Error", &url.Error{Op: "Get", URL: link, Err: io.ErrUnexpectedEOF}},
		{"url.Error wrapped", fmt.Errorf("fetch: %w", &url.Error{Op: "Get", URL: link, Err: errors.New("connection reset")})},
		{"URL in text", fmt.Errorf("proxy refused %s", link)},
		{"token alone", fmt.Errorf("proxy refused credential %s", tok)},
		{"token escaped", fmt.Errorf("proxy refused %s", url.QueryEscape(tok+"/+"))},
	}
	h := newHarness(t, fakegithub.Library{})
	c := h.client()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(tt.err.Error(), strings.TrimSuffix(url.QueryEscape(tok+"/+"), "%2F%2B")) {
				t.Fatalf("the case does not carry the token; it would prove nothing: %v", tt.err)
			}
			hide := urlSecrets(link)
			if tt.name == "token escaped" {
				hide = urlSecrets(link + "%2F%2B")
			}
			err := c.mapErrorHiding(op{what: "download the archive", target: targetArchive, name: "a"}, nil, stripURL(tt.err), hide...)
			f := fault.As(err)
			if f == nil || f.Code != fault.NetworkError {
				t.Fatalf("mapped = %v, want NETWORK_ERROR", err)
			}
			out := fmt.Sprintf("%v %+v %v", err, f, f.Err)
			for _, leak := range []string{tok, "codeload.github.com/acme", "legacy.tar.gz"} {
				if strings.Contains(out, leak) {
					t.Errorf("%q leaked: %s", leak, out)
				}
			}
		})
	}
}

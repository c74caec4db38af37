package fakegithub

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// noRedirects is a client that returns redirects instead of following them.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func get(t *testing.T, client *http.Client, u string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	return resp, b
}

// untar returns the regular files and folders of a tar.gz archive.
func untar(t *testing.T, data []byte) (files map[string]string, dirs []string) {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("not gzip: %v", err)
	}
	tr := tar.NewReader(zr)
	files = map[string]string{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files, dirs
		}
		if err != nil {
			t.Fatalf("not tar: %v", err)
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			dirs = append(dirs, hdr.Name)
		case tar.TypeReg:
			b, _ := io.ReadAll(tr)
			files[hdr.Name] = string(b)
		}
	}
}

func TestTarball(t *testing.T) {
	for _, base := range []string{"", "/api/v3"} {
		t.Run("prefix "+base, func(t *testing.T) {
			s := New("acme", "prompts")
			defer s.Close()
			s.SetToken("ghp_right")
			head := s.PutFiles(map[string][]byte{"templates/A.json": []byte(`{"a":1}`), "templates/sub/B.json": []byte(`{"b":2}`)})
			s.Reset()
			auth := map[string]string{"Authorization": "Bearer ghp_right"}

			resp, _ := get(t, noRedirects, s.srv.URL+base+"/repos/acme/prompts/tarball/main", auth)
			loc, err := url.Parse(resp.Header.Get("Location"))
			if resp.StatusCode != http.StatusFound || err != nil {
				t.Fatalf("tarball: %d, Location %q; want 302 with a URL", resp.StatusCode, resp.Header.Get("Location"))
			}
			if loc.Path != "/_codeload/acme/prompts/legacy.tar.gz/"+head || len(loc.Query().Get("token")) < 20 {
				t.Errorf("Location %s: want the download of %s with a temporary token", loc.Path, head)
			}
			if resp.Header.Get("X-RateLimit-Remaining") == "" || s.Count(RouteTarball) != 1 || s.Total() != 1 {
				t.Errorf("tarball: rate-limit headers %q, Count %d, Total %d; want an API request", resp.Header.Get("X-RateLimit-Remaining"), s.Count(RouteTarball), s.Total())
			}
			if got := s.ArchiveTokens(); len(got) != 1 || got[0] != loc.Query().Get("token") {
				t.Errorf("ArchiveTokens = %v, want the one handed out", got)
			}

			// No Authorization: the URL is the credential.
			resp, body := get(t, http.DefaultClient, loc.String(), nil)
			if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("ETag"), `"`) {
				t.Fatalf("download: %d, ETag %q; want 200 with a strong ETag", resp.StatusCode, resp.Header.Get("ETag"))
			}
			files, dirs := untar(t, body)
			root := "acme-prompts-" + head[:7] + "/"
			want := map[string]string{root + "README.md": "# prompts\n", root + "templates/A.json": `{"a":1}`, root + "templates/sub/B.json": `{"b":2}`}
			if len(files) != len(want) {
				t.Errorf("archive files %v, want %v", files, want)
			}
			for p, c := range want {
				if files[p] != c {
					t.Errorf("archive %s = %q, want %q", p, files[p], c)
				}
			}
			if strings.Join(dirs, " ") != root+" "+root+"templates/ "+root+"templates/sub/" {
				t.Errorf("archive folders %v", dirs)
			}
			if s.Total() != 1 || s.Downloads() != 1 {
				t.Errorf("after the download: Total %d, Downloads %d; want the download counted apart", s.Total(), s.Downloads())
			}
			if d := s.DownloadRequests(); len(d) != 1 || d[0].Authorized || d[0].Status != 200 || d[0].Query != "" {
				t.Errorf("download requests %+v", d)
			}
			if again, _ := get(t, http.DefaultClient, loc.String(), map[string]string{"If-None-Match": resp.Header.Get("ETag")}); again.StatusCode != http.StatusNotModified {
				t.Errorf("download with the ETag: %d, want 304", again.StatusCode)
			}

			bad := *loc
			for name, q := range map[string]string{"wrong token": "token=nope", "no token": ""} {
				bad.RawQuery = q
				if resp, _ := get(t, http.DefaultClient, bad.String(), nil); resp.StatusCode != http.StatusNotFound {
					t.Errorf("%s: %d, want 404", name, resp.StatusCode)
				}
			}
			other := *loc
			other.Path = strings.Replace(loc.Path, head, strings.Repeat("0", 40), 1)
			if resp, _ := get(t, http.DefaultClient, other.String(), nil); resp.StatusCode != http.StatusNotFound {
				t.Errorf("the token for another commit: %d, want 404", resp.StatusCode)
			}
			s.ExpireArchiveTokens()
			if resp, _ := get(t, http.DefaultClient, loc.String(), nil); resp.StatusCode != http.StatusNotFound {
				t.Errorf("expired token: %d, want 404", resp.StatusCode)
			}
		})
	}
}

func TestTarballFaults(t *testing.T) {
	s := New("acme", "prompts")
	defer s.Close()
	tarball := s.URL() + "repos/acme/prompts/tarball/main"
	tests := []struct {
		name  string
		setup func()
		url   string
		want  int
	}{
		{"unknown ref", func() {}, s.URL() + "repos/acme/prompts/tarball/nope", 404},
		{"unknown repository", func() {}, s.URL() + "repos/acme/nope/tarball/main", 404},
		{"token required", func() { s.SetToken("ghp_right") }, tarball, 401},
		{"fault", func() { s.SetFault(500) }, tarball, 500},
		{"route fault", func() { s.SetRouteFault(RouteTarball, 404) }, tarball, 404},
		{"rate limited", func() { s.SetRemaining(0) }, tarball, 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.setup()
			defer func() { s.SetToken(""); s.SetFault(0); s.SetRouteFault(RouteTarball, 0); s.SetRemaining(100) }()
			if resp, _ := get(t, noRedirects, tt.url, nil); resp.StatusCode != tt.want || resp.Header.Get("Location") != "" {
				t.Errorf("status %d, Location %q; want %d and no redirect", resp.StatusCode, resp.Header.Get("Location"), tt.want)
			}
		})
	}

	// The download host has faults of its own, and ignores the API's.
	resp, _ := get(t, noRedirects, tarball, nil)
	loc := resp.Header.Get("Location")
	s.SetFault(500)
	s.SetDownloadFault(http.StatusBadGateway)
	if resp, _ := get(t, http.DefaultClient, loc, nil); resp.StatusCode != http.StatusBadGateway {
		t.Errorf("SetDownloadFault(502): %d", resp.StatusCode)
	}
	s.SetDownloadFault(0)
	if resp, _ := get(t, http.DefaultClient, loc, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("download while the API fails: %d, want 200", resp.StatusCode)
	}
	s.SetFault(0)

	s.SetDownloadCut(10)
	req, _ := http.NewRequest(http.MethodGet, loc, nil)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil {
			t.Error("a cut download read to the end without error")
		}
	}
	s.SetDownloadCut(0)

	s.SetDownloadFault(FaultDrop)
	if resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Get(loc); err == nil {
		resp.Body.Close()
		t.Error("a dropped download answered")
	}
	s.SetDownloadFault(0)

	// An archive may differ from the commit, as .gitattributes makes it.
	s.SetArchiveContent("README.md", nil)
	s.SetArchiveContent("x.txt", []byte("substituted"))
	s.PutFile("x.txt", []byte("committed"))
	resp, _ = get(t, noRedirects, tarball, nil)
	_, body := get(t, http.DefaultClient, resp.Header.Get("Location"), nil)
	files, _ := untar(t, body)
	root := "acme-prompts-" + s.Head()[:7] + "/"
	if _, ok := files[root+"README.md"]; ok || files[root+"x.txt"] != "substituted" {
		t.Errorf("archive with overrides: %v", files)
	}
}

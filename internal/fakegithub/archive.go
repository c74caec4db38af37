package fakegithub

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// archiveTime is every archive entry's modification time: GitHub uses the
// commit's date, and a fixed one keeps the fake's archives (and ETags)
// deterministic.
var archiveTime = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

// Downloads returns how many archive downloads reached the download host
// (which GitHub does not count against the API rate limit).
func (s *Server) Downloads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.downloads)
}

// DownloadRequests returns the archive downloads recorded since the last
// Reset; Query is left empty, so the temporary token is not kept there.
func (s *Server) DownloadRequests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.downloads)
}

// ArchiveTokens returns every temporary token the tarball route has handed
// out, so tests can check that none leaks.
func (s *Server) ArchiveTokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.grants))
	for t := range s.grants {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// ExpireArchiveTokens makes every temporary token handed out so far
// invalid, as time does on GitHub.
func (s *Server) ExpireArchiveTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for t, g := range s.grants {
		g.expires = time.Time{}
		s.grants[t] = g
	}
}

// SetDownloadFault answers archive downloads with status (and no archive),
// or drops them unanswered (FaultDrop), until called with 0.
func (s *Server) SetDownloadFault(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.downloadFault = status
}

// SetDownloadCut makes archive downloads announce the whole archive but send
// only its first n bytes and drop the connection, until called with 0.
func (s *Server) SetDownloadCut(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.downloadCut = n
}

// SetArchiveContent makes archives hold content at p instead of the
// committed file, as a .gitattributes export-subst does; nil content leaves
// the file out of archives, as export-ignore does. The tree and blobs are
// unchanged.
func (s *Server) SetArchiveContent(p string, content []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.archiveOverride == nil {
		s.archiveOverride = map[string][]byte{}
	}
	s.archiveOverride[p] = slices.Clone(content)
}

func (s *Server) handleTarball(w http.ResponseWriter, r *http.Request) {
	if !s.repoOK(w, r) {
		return
	}
	c := s.resolve(r.PathValue("ref"))
	if c == nil {
		s.writeError(w, r, http.StatusNotFound, "Not Found")
		return
	}
	b := make([]byte, 20)
	rand.Read(b)
	token := hex.EncodeToString(b)
	s.mu.Lock()
	s.grants[token] = grant{sha: c.sha, expires: time.Now().Add(archiveTokenLife)}
	s.mu.Unlock()
	s.rateHeaders(w, r, true)
	w.Header().Set("Location", s.srv.URL+downloadPrefix+s.owner+"/"+s.repo+"/legacy.tar.gz/"+c.sha+"?token="+token)
	w.WriteHeader(http.StatusFound)
}

// serveDownload is the download host: the temporary token in the query is
// the only credential, and anything it does not open is a 404.
func (s *Server) serveDownload(w http.ResponseWriter, r *http.Request) {
	rec := Request{
		Method:      r.Method,
		Path:        r.URL.Path,
		Accept:      r.Header.Get("Accept"),
		IfNoneMatch: r.Header.Get("If-None-Match"),
		Authorized:  r.Header.Get("Authorization") != "",
	}
	sw := &statusWriter{ResponseWriter: w}
	defer func() {
		rec.Status = sw.status
		s.mu.Lock()
		s.downloads = append(s.downloads, rec)
		s.mu.Unlock()
	}()

	rest := strings.TrimPrefix(r.URL.Path, downloadPrefix)
	parts := strings.Split(rest, "/")
	token := r.URL.Query().Get("token")
	s.mu.Lock()
	g, ok := s.grants[token]
	status, cut := s.downloadFault, s.downloadCut
	s.mu.Unlock()
	if r.Method != http.MethodGet || len(parts) != 4 || parts[0] != s.owner || parts[1] != s.repo ||
		parts[2] != "legacy.tar.gz" || !ok || g.sha != parts[3] || time.Now().After(g.expires) {
		http.Error(sw, "404: Not Found", http.StatusNotFound)
		return
	}
	switch status {
	case 0:
	case FaultDrop:
		drop(w)
		return
	default:
		http.Error(sw, http.StatusText(status), status)
		return
	}
	body := s.archive(g.sha)
	etag := `"` + hashHex("archive", string(body)) + `"`
	h := sw.Header()
	h.Set("ETag", etag)
	if etagMatch(r.Header.Get("If-None-Match"), etag) {
		sw.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", "application/x-gzip")
	h.Set("Content-Disposition", "attachment; filename="+s.archiveRoot(g.sha)+".tar.gz")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	sw.WriteHeader(http.StatusOK)
	if cut > 0 && cut < len(body) {
		sw.Write(body[:cut])
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		panic(http.ErrAbortHandler) // drops the connection short of Content-Length
	}
	sw.Write(body)
}

func (s *Server) archiveRoot(sha string) string {
	return s.owner + "-" + s.repo + "-" + sha[:7]
}

// archive is the commit's files as GitHub's legacy.tar.gz lays them out: a
// pax global header naming the commit, then OWNER-REPO-SHA7/ and every
// folder and file below it, in path order.
func (s *Server) archive(sha string) []byte {
	s.mu.Lock()
	files := map[string][]byte{}
	for p, blob := range s.commits[sha].files {
		content, overridden := s.archiveOverride[p]
		if !overridden {
			content = s.blobs[blob]
		}
		if overridden && content == nil {
			continue
		}
		files[p] = content
	}
	s.mu.Unlock()

	root := s.archiveRoot(sha)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	must := func(err error) {
		if err != nil {
			panic("fakegithub: writing an archive in memory: " + err.Error())
		}
	}
	must(tw.WriteHeader(&tar.Header{Typeflag: tar.TypeXGlobalHeader, Name: "pax_global_header",
		PAXRecords: map[string]string{"comment": sha}, Format: tar.FormatPAX}))
	dirs := map[string]bool{}
	for p := range files {
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	names := make([]string, 0, len(dirs)+len(files))
	for d := range dirs {
		names = append(names, d+"/")
	}
	for p := range files {
		names = append(names, p)
	}
	slices.Sort(names)
	must(tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: root + "/", Mode: 0o775, ModTime: archiveTime}))
	for _, n := range names {
		if strings.HasSuffix(n, "/") {
			must(tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: root + "/" + n, Mode: 0o775, ModTime: archiveTime}))
			continue
		}
		content := files[n]
		must(tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: root + "/" + n, Mode: 0o664,
			Size: int64(len(content)), ModTime: archiveTime}))
		_, err := tw.Write(content)
		must(err)
	}
	must(tw.Close())
	must(zw.Close())
	return buf.Bytes()
}

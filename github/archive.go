package github

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	gh "github.com/google/go-github/v66/github"

	"github.com/flowyprompt/flowyprompt/templates"
)

// When a sync is missing many blobs (a cold start, a large change), one
// archive of the commit replaces a request per blob: the tarball request is
// one API request, and the download it redirects to is not an API request
// at all. The costs that decide between the two:
//
//   - per blob: one API request each, out of 5,000 an hour (60 without a
//     token), blobParallelism at a time, so up to eight cost one round
//     trip;
//   - archive: one API request, then a second round trip to another host,
//     and the bytes of the whole repository, not only the missing files.
const (
	// archiveMinBlobs: up to this many missing blobs (a change of a few
	// files) are fetched one by one. They go out in one parallel round,
	// as fast as the archive's two sequential round trips, without
	// downloading the rest of the repository, and cost at most seven
	// requests more than the archive would.
	archiveMinBlobs = blobParallelism
	// archiveBytesPerBlob is how much archive may be downloaded for each
	// blob it saves a request for: a request's round trip (100–300 ms)
	// is about the time 1 MiB takes on a common link, so past this the
	// archive is slower than the requests it replaces, which matters when
	// the templates are a small folder of a large repository.
	archiveBytesPerBlob = 1 << 20
	// archiveMaxSize caps any archive, whatever it saves.
	archiveMaxSize = 256 << 20
	// archiveTimeout bounds one archive download, within the sync's own
	// deadline: the default HTTP client's 30 s limit covers the whole
	// body, which a large archive on a slow link may need more than.
	archiveTimeout = 90 * time.Second
	// tarBlock is tar's block size: every header and every file's content
	// padding is a multiple of it.
	tarBlock = 512
)

// errArchiveUnusable marks a failure of the archive route that is not
// GitHub refusing the request (the download failed, the archive was
// corrupt or too large, the redirect was odd): the blobs can still be
// fetched one by one.
var errArchiveUnusable = errors.New("the repository archive could not be used")

// errArchiveTooLarge is an archive, compressed or not, past its bound.
var errArchiveTooLarge = errors.New("the archive is larger than its listing allows")

// useArchive says whether missing blobs are better fetched with the
// commit's archive, whose size is bounded by archiveSize (0: unknown).
func useArchive(missing int, archiveSize int64) bool {
	return missing > archiveMinBlobs && archiveSize > 0 &&
		archiveSize <= min(archiveMaxSize, int64(missing)*archiveBytesPerBlob)
}

// tarSize bounds the size of the tar archive GitHub makes of a tree listed
// recursively: a header block per entry and the content padded to whole
// blocks, plus room for the extended (pax) headers that long paths and
// the top-level folder's name need, GitHub's global header naming the
// commit, and the two closing blocks. A quarter more and 1 MiB are added
// because an archive is not the tree: .gitattributes export-subst can
// expand files.
func tarSize(entries []*gh.TreeEntry) int64 {
	n := int64(4 * tarBlock)
	for _, e := range entries {
		n += 3 * tarBlock // the header, and a pax header of up to two blocks
		if e.GetType() == "blob" {
			n += (int64(e.GetSize()) + tarBlock - 1) / tarBlock * tarBlock
		}
	}
	return n + n/4 + 1<<20
}

// archiveFilter says what to keep of an archive.
type archiveFilter struct {
	prefix      string               // the templates folder with a trailing slash, or ""
	want        map[string]TreeEntry // path → the tree's entry, for the files wanted
	maxFileSize int
	maxBytes    int64 // bound on the compressed and on the decompressed stream
}

// archiveResult is what an archive gave.
type archiveResult struct {
	contents map[string][]byte // blob SHA → content, checked against the SHA
	// mismatched lists wanted paths whose archived content was not the
	// tree's blob (export-subst, a racing push, corruption): they are
	// fetched one by one.
	mismatched []string
	read       int64 // decompressed bytes read
}

// Archive downloads the tar archive of commit sha and returns the wanted
// files found in it. It costs one API request (GitHub answers with a
// redirect to a download host, whose URL carries a temporary token) and one
// download that is not an API request. An error wrapping errArchiveUnusable
// may come with the files read before the failure: they are checked, and
// only the others need fetching. Any other error is GitHub refusing the
// request, mapped like any other.
//
// The download URL is a credential: it never leaves this function, and
// every error is redacted of it.
func (c *Client) Archive(ctx context.Context, sha string, f archiveFilter) (archiveResult, error) {
	o := op{what: "download the archive of " + c.repoName() + " at " + short(sha), target: targetArchive, name: sha}
	// GetArchiveLink sends the request through the transport itself: the
	// 302 is returned, not followed, so the Authorization header our
	// transport adds for the API's host is never sent to the download
	// host. Neither is anything else: the download below has its own
	// client, without the token.
	link, resp, err := c.gh.Repositories.GetArchiveLink(ctx, c.owner, c.repo, gh.Tarball,
		&gh.RepositoryContentGetOptions{Ref: sha}, 0)
	var hide []string
	if resp != nil {
		hide = urlSecrets(resp.Header.Get("Location"))
	}
	if err != nil {
		mapped := c.mapErrorHiding(o, resp, err, hide...)
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		if status == 0 || status >= 400 || errors.Is(mapped, context.Canceled) {
			return archiveResult{}, mapped
		}
		// A redirect other than the archive's (a 301 for a renamed
		// repository), or an unparsable Location: the blob requests
		// follow what GitHub says.
		return archiveResult{}, fmt.Errorf("%w: %w", errArchiveUnusable, mapped)
	}
	hide = append(hide, urlSecrets(link.String())...)
	unusable := func(resp *http.Response, err error) error {
		var r *gh.Response
		if resp != nil {
			r = &gh.Response{Response: resp}
		}
		return fmt.Errorf("%w: %w", errArchiveUnusable, c.mapErrorHiding(o, r, stripURL(err), hide...))
	}
	if link.Host == "" || !(link.Scheme == "https" || link.Scheme == c.apiScheme) {
		// Plain http is accepted only where the API itself is (a loopback
		// test server): the URL authorises the download by itself.
		return archiveResult{}, unusable(nil, errors.New("GitHub's archive redirect points to no usable https address"))
	}

	ctx, cancel := context.WithTimeout(ctx, archiveTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, link.String(), nil)
	if err != nil {
		return archiveResult{}, unusable(nil, err)
	}
	req.Header.Set("User-Agent", "flowyprompt")
	dl, err := c.download.Do(req)
	if err != nil {
		return archiveResult{}, unusable(nil, err)
	}
	defer dl.Body.Close()
	if dl.StatusCode != http.StatusOK {
		return archiveResult{}, unusable(dl, fmt.Errorf("the archive download answered %s", dl.Status))
	}
	// From here on the failures are the answer's: passing the 200 says so.
	if dl.ContentLength > f.maxBytes {
		return archiveResult{}, unusable(dl, fmt.Errorf("%w: %d bytes announced, at most %d expected", errArchiveTooLarge, dl.ContentLength, f.maxBytes))
	}
	res, err := readArchive(dl.Body, f)
	if err != nil {
		return res, unusable(dl, err)
	}
	return res, nil
}

// downloadRedirects lets the archive download follow the download host's
// own redirects, which carry no credential of ours, but not from https to
// plain http, which would expose the URL's token.
func downloadRedirects(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 {
		return errors.New("stopped after 5 redirects")
	}
	if via[0].URL.Scheme == "https" && req.URL.Scheme != "https" {
		return errors.New("redirect from https to plain http refused")
	}
	return nil
}

// urlSecrets returns what of a URL must not be shown: the URL itself, with
// and without its query, the query and every query value (a temporary
// token).
func urlSecrets(raw string) []string {
	if raw == "" {
		return nil
	}
	out := []string{raw}
	u, err := url.Parse(raw)
	if err != nil {
		return out
	}
	if u.Host != "" && u.Path != "" && u.Path != "/" {
		out = append(out, u.Scheme+"://"+u.Host+u.EscapedPath())
	}
	if u.RawQuery != "" {
		out = append(out, u.RawQuery)
	}
	for _, vs := range u.Query() {
		out = append(out, vs...)
	}
	return out
}

// stripURL drops the URL a *url.Error carries (net/http puts the request's
// URL, token and all, in every error it returns), keeping the cause.
func stripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s archive download: %w", ue.Op, ue.Err)
	}
	return err
}

// readArchive reads a gzip-compressed tar archive as GitHub makes them:
// every path under one top-level folder (OWNER-REPO-SHA7/), which is
// stripped. It keeps the regular files f wants, matched by path, whose
// content is the tree's blob; everything else is skipped unread (the tar
// reader discards it), so memory holds at most the wanted files. Both the
// compressed and the decompressed stream are bounded by f.maxBytes, so a
// decompression bomb stops at the bound.
func readArchive(r io.Reader, f archiveFilter) (res archiveResult, err error) {
	res.contents = map[string][]byte{}
	zr, err := gzip.NewReader(&boundedReader{r: r, n: f.maxBytes})
	if err != nil {
		return res, fmt.Errorf("read the archive: %w", err)
	}
	defer zr.Close()
	// A GitHub archive is one gzip member; anything after it is not ours.
	zr.Multistream(false)
	plain := &boundedReader{r: zr, n: f.maxBytes}
	defer func() { res.read = min(plain.read, plain.n) }() // the byte past the bound was never delivered
	tr := tar.NewReader(plain)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return res, nil
		}
		if errors.Is(err, tar.ErrInsecurePath) {
			continue // with GODEBUG=tarinsecurepath=0; archivePath refuses it anyway
		}
		if err != nil {
			return res, fmt.Errorf("read the archive: %w", err)
		}
		p, ok := archivePath(hdr, f.prefix)
		if !ok {
			continue
		}
		e, ok := f.want[p]
		if !ok {
			continue
		}
		if _, have := res.contents[e.SHA]; have {
			continue // the same content at another path
		}
		if hdr.Size != int64(e.Size) || hdr.Size > int64(f.maxFileSize) || hdr.Size < 0 {
			// Not the tree's blob, or too large to hold: left unread.
			res.mismatched = append(res.mismatched, p)
			continue
		}
		data := make([]byte, hdr.Size)
		if _, err := io.ReadFull(tr, data); err != nil {
			return res, fmt.Errorf("read %s from the archive: %w", p, err)
		}
		if gitBlobSHA(data) != strings.ToLower(e.SHA) {
			res.mismatched = append(res.mismatched, p)
			continue
		}
		res.contents[e.SHA] = data
	}
}

// archivePath returns the repository path of a regular file in an
// archive, without the top-level folder, if it lies under prefix, is not
// hidden there and is a plain relative path; ok is false for anything else
// (folders, links, the pax global header, paths with ".." or stray
// slashes).
func archivePath(hdr *tar.Header, prefix string) (p string, ok bool) {
	if hdr.Typeflag != tar.TypeReg {
		return "", false
	}
	_, p, ok = strings.Cut(hdr.Name, "/")
	if !ok || p == "" {
		return "", false
	}
	// A hidden folder may hold the templates (.github/prompts): only what
	// is hidden below it is refused, next.
	if clean, err := templates.RelPath(p); clean != p || (err != nil && !errors.Is(err, templates.ErrPathHidden)) {
		return "", false
	}
	rest, ok := strings.CutPrefix(p, prefix)
	if !ok || rest == "" || templates.Hidden(rest) {
		return "", false
	}
	return p, true
}

// boundedReader reads at most n bytes from r and fails past them, where
// io.LimitReader would end quietly and make a cut archive look complete.
type boundedReader struct {
	r    io.Reader
	n    int64
	read int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.read > b.n {
		return 0, errArchiveTooLarge
	}
	if left := b.n - b.read + 1; int64(len(p)) > left {
		// One byte past the bound tells "exactly n" from "more".
		p = p[:left]
	}
	n, err := b.r.Read(p)
	b.read += int64(n)
	if b.read > b.n {
		return n - int(b.read-b.n), errArchiveTooLarge
	}
	return n, err
}

package folder

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/flowyprompt/flowyprompt/internal/fault"
	"github.com/flowyprompt/flowyprompt/templates"
)

// The versions of a folder's templates are the commits of the Git
// repository the folder is in, read by running the git command. A Git
// implementation as a dependency (go-git and its tree of packages) would
// be far larger than reading a log and a few files needs, and the command
// sees the repository exactly as the person editing the folder does.
//
// Only commits are versions: an edit not committed yet is served as the
// current template but has no commit, so no history entry.

const (
	// gitTimeout bounds each git command: a local read takes milliseconds,
	// so a command still running after this is stuck (a lock, a network
	// file system).
	gitTimeout = 10 * time.Second
	// maxGitStderr is how much of git's error output is kept for messages.
	maxGitStderr = 4 << 10
	// maxLogOutput bounds the log of one page of commits: commit messages
	// are unbounded in principle.
	maxLogOutput = 4 << 20
)

// gitGlobalArgs come before every command: pathspecs are file names (a
// template named [draft].json is not a glob), and no signature check may
// add lines to the log the parser reads.
var gitGlobalArgs = []string{"--no-pager", "--literal-pathspecs", "-c", "log.showSignature=false", "-c", "log.follow=false"}

// gitDropEnv are variables that would point git at another repository or
// index than the folder's own.
var gitDropEnv = []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
	"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_PREFIX"}

// gitEnv is the environment of git commands: the server's, without the
// variables that choose a repository, never prompting for credentials,
// taking no optional locks (the person editing may be running git too),
// and with untranslated messages, so they can be recognised.
func gitEnv() []string {
	env := make([]string, 0, len(os.Environ())+4)
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, d := range gitDropEnv {
			if k == d {
				drop = true
				break
			}
		}
		if !drop && k != "GIT_TERMINAL_PROMPT" && k != "GIT_OPTIONAL_LOCKS" && k != "LC_ALL" {
			env = append(env, kv)
		}
	}
	return append(env, "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C")
}

// gitError is a git command that failed: its exit status and the start of
// what it wrote to stderr.
type gitError struct {
	cmd    string
	stderr string
	err    error
}

func (e *gitError) Error() string {
	if e.stderr == "" {
		return fmt.Sprintf("git %s: %v", e.cmd, e.err)
	}
	return fmt.Sprintf("git %s: %v: %s", e.cmd, e.err, e.stderr)
}

func (e *gitError) Unwrap() error { return e.err }

// exitCode is the exit status of the git command behind err, -1 if none.
func exitCode(err error) int {
	var x *exec.ExitError
	if errors.As(err, &x) {
		return x.ExitCode()
	}
	return -1
}

// limitedBuffer keeps the first max bytes written to it and drops the rest.
type limitedBuffer struct {
	buf bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// git runs the git command args in the folder, with ctx and gitTimeout,
// giving stdin to it and its stdout to read. When read fails the command
// is stopped, so a reader that stops early never leaves git blocked on a
// full pipe.
//
// At most maxGitRuns run at once per folder (the others wait, within ctx),
// and each spends one run of the version lookup ctx marks, if any
// (templates.WithLookup).
func (d *Source) git(ctx context.Context, stdin string, read func(io.Reader) error, args ...string) error {
	if err := templates.SpendLookupRun(ctx, "git "+args[0]); err != nil {
		return err
	}
	if err := d.gitRuns.Acquire(ctx, 1); err != nil {
		return fmt.Errorf("wait to run git %s: %w", args[0], err)
	}
	defer d.gitRuns.Release(1)
	if d.gitStarted != nil {
		defer d.gitStarted(args)()
	}
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append(gitGlobalArgs[:len(gitGlobalArgs):len(gitGlobalArgs)], args...)...)
	cmd.Dir = d.dir
	cmd.Env = gitEnv()
	// Once git is stopped, a process it left holding the pipes does not
	// hold the request too.
	cmd.WaitDelay = time.Second
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	stderr := &limitedBuffer{max: maxGitStderr}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("git %s: %w", args[0], err)
	}
	if err := cmd.Start(); err != nil {
		return d.gitStartFailed(err)
	}
	rerr := read(out)
	if rerr != nil {
		cancel()
	}
	werr := cmd.Wait()
	switch {
	case rerr != nil:
		return rerr
	case werr != nil && ctx.Err() != nil:
		return fmt.Errorf("git %s in the template folder: %w", args[0], ctx.Err())
	case werr != nil:
		return &gitError{cmd: args[0], stderr: strings.TrimSpace(stderr.buf.String()), err: werr}
	}
	return nil
}

// gitOutput runs git and returns its stdout, at most limit bytes.
func (d *Source) gitOutput(ctx context.Context, limit int64, args ...string) ([]byte, error) {
	var data []byte
	err := d.git(ctx, "", func(r io.Reader) error {
		var err error
		data, err = io.ReadAll(io.LimitReader(r, limit+1))
		if err == nil && int64(len(data)) > limit {
			err = fmt.Errorf("git %s wrote more than %d bytes", args[0], limit)
		}
		return err
	}, args...)
	return data, err
}

// gitStartFailed explains a git command that could not be started: git
// missing is a folder without versions, not a server failure.
func (d *Source) gitStartFailed(err error) error {
	if errors.Is(err, exec.ErrNotFound) {
		return d.unsupported("git is not installed (not on PATH), and the folder's versions are read with it",
			"install git on the server's machine, or omit version to use the current template", err)
	}
	return fmt.Errorf("run git in the template folder: %w", err)
}

// unsupported is the VERSIONS_UNSUPPORTED fault of this folder.
func (d *Source) unsupported(why, how string, err error) *fault.Error {
	return &fault.Error{Code: fault.VersionsUnsupported,
		What: "cannot read the versions of the templates in the template folder",
		Why:  "versions need a GitHub library or a folder in a Git work tree: " + why,
		How:  how, Err: err}
}

// repoPrefix checks that the folder is in a Git work tree, now (a folder
// may become one at any time), and returns the folder's path from the top
// of the work tree ("" or ending in "/"), which names its files in
// "COMMIT:PATH" object names.
func (d *Source) repoPrefix(ctx context.Context) (string, error) {
	out, err := d.gitOutput(ctx, 64<<10, "rev-parse", "--is-inside-work-tree", "--show-prefix")
	inside, prefix, _ := strings.Cut(string(out), "\n")
	notRepo := "this template comes from a folder that is not in a Git work tree"
	how := "omit version to use the current template; for versions, make the folder part of a Git repository (git init, then commit the templates) or serve the library from a GitHub repository (GITHUB_REPO_URL or --source github:OWNER/REPO)"
	var ge *gitError
	switch {
	case errors.As(err, &ge) && strings.Contains(ge.stderr, "not a git repository"):
		return "", d.unsupported(notRepo, how, err)
	case errors.As(err, &ge):
		return "", d.unsupported("git cannot read the folder's repository: "+ge.stderr,
			"fix what git reports (for a repository owned by another user, see git config safe.directory), or omit version", err)
	case err != nil:
		return "", err
	case inside != "true":
		return "", d.unsupported(notRepo+" (it is inside a .git folder)", how, nil)
	}
	return strings.TrimSuffix(prefix, "\n"), nil
}

// checkHistoryPath refuses what is not a path of the folder's catalog (a
// visible file inside the folder that IsLibraryFile names), or would not survive being a
// line of git's input: the history of the repository's other files is not
// the library's to show.
func checkHistoryPath(p string) error {
	clean, err := templates.RelPath(p)
	if err != nil || clean != p || !templates.IsLibraryFile(p) || strings.ContainsFunc(p, unicode.IsControl) {
		return fault.New(fault.InvalidArgument, "read the history of "+strconv.Quote(p),
			"the path is not a file of the template folder", "name a template; its path is the one flowyprompt_get_template shows")
	}
	return nil
}

// checkRev refuses a revision that git could take for an option, or that
// is not one name: it is checked before any git command sees it.
func checkRev(rev string) error {
	why := ""
	switch {
	case rev == "":
		why = "it is empty"
	case strings.HasPrefix(rev, "-"):
		why = "it starts with '-'"
	case strings.ContainsFunc(rev, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }):
		why = "it holds a space or a control character"
	case strings.Contains(rev, ".."):
		why = `it holds "..", a range of commits rather than one`
	case strings.ContainsAny(rev, ":^~?*[\\") || strings.Contains(rev, "@{"):
		why = "it holds one of : ^ ~ ? * [ \\ @{, which no tag or branch name holds"
	}
	if why == "" {
		return nil
	}
	return &fault.Error{Code: fault.InvalidArgument,
		What:    fmt.Sprintf("version %q is refused", rev),
		Why:     why,
		How:     "pass a metadata.version, a tag, a branch or a commit SHA (flowyprompt_template_history lists them)",
		Details: map[string]any{"version": rev}}
}

// FileHistory lists the commits of the folder's repository that changed
// the file at p (a path of the catalog, relative to the folder), newest
// first from HEAD, at most templates.HistoryPage of them. Each revision's
// Version is read too: the files are local, one git command reads them
// all. A file never committed has no history; an uncommitted edit is not
// a version. The history is kept per HEAD commit: asked again, it costs
// the two git runs that find HEAD, and a new commit is seen at once.
func (d *Source) FileHistory(ctx context.Context, p string) (templates.Revisions, error) {
	if err := checkHistoryPath(p); err != nil {
		return templates.Revisions{}, err
	}
	prefix, err := d.repoPrefix(ctx)
	if err != nil {
		return templates.Revisions{}, err
	}
	head, err := d.gitOutput(ctx, 1024, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if exitCode(err) == 1 {
		// A repository without commits yet.
		return templates.Revisions{Revisions: []templates.Revision{}}, nil
	}
	if err != nil {
		return templates.Revisions{}, fmt.Errorf("read the HEAD commit of the template folder's repository: %w", err)
	}
	ref := strings.TrimSpace(string(head))
	if revs, ok := d.gitRead.history(ref, p); ok {
		return revs, nil
	}
	out, err := d.gitOutput(ctx, maxLogOutput, "log", "-z", "--no-color", "--format="+logFormat,
		"-n", strconv.Itoa(templates.HistoryPage+1), ref, "--", p)
	if err != nil {
		return templates.Revisions{}, fmt.Errorf("list the commits of %s: %w", p, err)
	}
	revs, err := parseLog(out)
	if err != nil {
		return templates.Revisions{}, fmt.Errorf("list the commits of %s: %w", p, err)
	}
	truncated := len(revs) > templates.HistoryPage
	if truncated {
		revs = revs[:templates.HistoryPage]
	}
	specs := make([]string, len(revs))
	for i, r := range revs {
		specs[i] = r.Commit + ":" + prefix + p
	}
	err = d.readBlobs(ctx, specs, func(i int, data []byte, err error) {
		d.gitRead.putBlob(revs[i].Commit+":"+p, data, err)
		if err == nil {
			revs[i].Version = templates.DeclaredVersion(data)
		}
	})
	if err != nil {
		return templates.Revisions{}, fmt.Errorf("read the versions of %s: %w", p, err)
	}
	out2 := templates.Revisions{Revisions: revs, Truncated: truncated, Ref: ref}
	d.gitRead.putHistory(ref, p, out2)
	return out2, nil
}

// logFormat is one commit of git log -z: fields split by the unit
// separator, which names and dates cannot hold; the raw message last, so
// whatever it holds stays in it. -z ends each commit with a NUL.
const logFormat = "%H%x1f%at%x1f%an%x1f%B"

// parseLog reads git log -z --format=logFormat output.
func parseLog(out []byte) ([]templates.Revision, error) {
	revs := []templates.Revision{}
	for rec := range bytes.SplitSeq(out, []byte{0}) {
		if len(bytes.TrimSpace(rec)) == 0 {
			continue
		}
		f := strings.SplitN(string(rec), "\x1f", 4)
		if len(f) != 4 || !isHex(f[0]) {
			return nil, fmt.Errorf("unexpected git log output %q", truncate(string(rec), 80))
		}
		secs, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("unexpected date %q in git log output: %w", f[1], err)
		}
		msg, _, _ := strings.Cut(f[3], "\n")
		revs = append(revs, templates.Revision{Commit: strings.ToLower(f[0]), Date: time.Unix(secs, 0).UTC(),
			Author: f[2], Message: strings.TrimSpace(msg)})
	}
	return revs, nil
}

// isHex reports whether s is a commit ID: SHA-1 or SHA-256, in hex.
func isHex(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return false
		}
	}
	return true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// FileAt reads the file at p as of rev: a commit SHA (full or short), a
// tag or a branch of the folder's repository. A rev that names no commit,
// or a commit without the file, is a VERSION_NOT_FOUND fault; a file over
// the folder's size limit at that commit is refused unread.
func (d *Source) FileAt(ctx context.Context, p, rev string) ([]byte, error) {
	if err := checkHistoryPath(p); err != nil {
		return nil, err
	}
	if err := checkRev(rev); err != nil {
		return nil, err
	}
	if isHex(rev) {
		// A file at a full commit SHA never changes: read once (by a
		// history, most often), it costs no git run again.
		if it, ok := d.gitRead.blob(strings.ToLower(rev) + ":" + p); ok {
			return d.fileAtResult(p, rev, strings.ToLower(rev), it.data, it.err)
		}
	}
	prefix, err := d.repoPrefix(ctx)
	if err != nil {
		return nil, err
	}
	out, err := d.gitOutput(ctx, 1024, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if exitCode(err) == 1 {
		return nil, &fault.Error{Code: fault.VersionNotFound,
			What:    fmt.Sprintf("read %s at %q", p, rev),
			Why:     fmt.Sprintf("no commit, tag or branch of the folder's Git repository is named %q", rev),
			How:     "pass a metadata.version, a tag, a branch or a commit SHA (flowyprompt_template_history lists them)",
			Details: map[string]any{"version": rev}, Err: err}
	}
	if err != nil {
		return nil, fmt.Errorf("resolve %q in the template folder's repository: %w", rev, err)
	}
	commit := strings.ToLower(strings.TrimSpace(string(out)))
	var data []byte
	var ferr error
	if err := d.readBlobs(ctx, []string{commit + ":" + prefix + p}, func(_ int, b []byte, err error) { data, ferr = b, err }); err != nil {
		return nil, fmt.Errorf("read %s at %s: %w", p, rev, err)
	}
	d.gitRead.putBlob(commit+":"+p, data, ferr)
	return d.fileAtResult(p, rev, commit, data, ferr)
}

// fileAtResult is FileAt's answer for the file at p as read at commit
// (rev resolved): its bytes, or the fault saying why there are none.
func (d *Source) fileAtResult(p, rev, commit string, data []byte, ferr error) ([]byte, error) {
	var tl *tooLarge
	switch {
	case errors.Is(ferr, errNoFile):
		return nil, &fault.Error{Code: fault.VersionNotFound,
			What:    fmt.Sprintf("read %s at %q", p, rev),
			Why:     fmt.Sprintf("the file is not in commit %s", commit[:min(12, len(commit))]),
			How:     "pass a version from flowyprompt_template_history: it lists the commits that have the file",
			Details: map[string]any{"version": rev, "commit": commit}}
	case errors.As(ferr, &tl):
		return nil, templates.TooLarge(p, tl.size, int64(d.maxSize()))
	case ferr != nil:
		return nil, fmt.Errorf("read %s at %s: %w", p, rev, ferr)
	}
	return data, nil
}

// errNoFile is a readBlobs object that is missing or not a file.
var errNoFile = errors.New("no such file at that commit")

// tooLarge is a readBlobs file over the folder's size limit.
type tooLarge struct{ size int64 }

func (e *tooLarge) Error() string { return fmt.Sprintf("the file is %d bytes", e.size) }

// readBlobs reads the objects named by specs ("COMMIT:PATH" from the top
// of the work tree), calling each once per spec with its bytes, or
// errNoFile, or a *tooLarge for a file over the size limit. Two git runs:
// cat-file --batch-check gives every object's type and size, then
// cat-file --batch reads only the files within the limit, so a larger one
// is never inflated, let alone held in memory. The error returned is the
// commands'.
func (d *Source) readBlobs(ctx context.Context, specs []string, each func(i int, data []byte, err error)) error {
	if len(specs) == 0 {
		return nil
	}
	limit := int64(d.maxSize())
	type wanted struct {
		i    int
		oid  string
		size int64
	}
	var read []wanted
	err := d.git(ctx, strings.Join(specs, "\n")+"\n", func(r io.Reader) error {
		br := bufio.NewReader(r)
		for i, spec := range specs {
			header, err := br.ReadString('\n')
			if err != nil {
				return fmt.Errorf("git cat-file stopped at %s: %w", spec, err)
			}
			// "OID TYPE SIZE" for an object found, "NAME missing" (the
			// name may hold spaces) or "NAME ambiguous" for none.
			f := strings.Fields(header)
			var size int64 = -1
			if len(f) == 3 && isHex(f[0]) {
				if n, err := strconv.ParseInt(f[2], 10, 64); err == nil && n >= 0 {
					size = n
				}
			}
			switch {
			case size < 0 && (strings.HasSuffix(header, " missing\n") || strings.HasSuffix(header, " ambiguous\n")):
				each(i, nil, errNoFile)
			case size < 0:
				return fmt.Errorf("unexpected git cat-file output %q", truncate(header, 80))
			case f[1] != "blob":
				each(i, nil, errNoFile)
			case size > limit:
				each(i, nil, &tooLarge{size: size})
			default:
				read = append(read, wanted{i: i, oid: f[0], size: size})
			}
		}
		return nil
	}, "cat-file", "--batch-check")
	if err != nil || len(read) == 0 {
		return err
	}
	oids := make([]string, len(read))
	for k, w := range read {
		oids[k] = w.oid
	}
	return d.git(ctx, strings.Join(oids, "\n")+"\n", func(r io.Reader) error {
		br := bufio.NewReader(r)
		for _, w := range read {
			header, err := br.ReadString('\n')
			if err != nil {
				return fmt.Errorf("git cat-file stopped at %s: %w", specs[w.i], err)
			}
			// The object checked above, by its ID: the same size, unless
			// the repository changed under us.
			if f := strings.Fields(header); len(f) != 3 || f[0] != w.oid || f[2] != strconv.FormatInt(w.size, 10) {
				return fmt.Errorf("unexpected git cat-file output %q for %s", truncate(header, 80), specs[w.i])
			}
			data := make([]byte, w.size+1)
			if _, err := io.ReadFull(br, data); err != nil {
				return fmt.Errorf("git cat-file stopped in %s: %w", specs[w.i], err)
			}
			each(w.i, data[:w.size], nil)
		}
		return nil
	}, "cat-file", "--batch")
}

var _ templates.History = (*Source)(nil)

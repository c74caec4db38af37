package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/flowyprompt/flowyprompt/internal/fakegithub"
	"github.com/flowyprompt/flowyprompt/internal/natstest"
)

// startTimeout bounds how long a replica may take to print its URL.
const startTimeout = 20 * time.Second

// config is what one cluster is made of.
type config struct {
	bin       string        // the flowyprompt binary
	replicas  int           // how many
	templates int           // valid templates in the fake library
	cacheTTL  time.Duration // CACHE_TTL_MS of every replica
	token     string        // GitHub token the fake requires ("" for none)
	logLevel  string        // the replicas' LOG_LEVEL
	verbose   bool          // copy the replicas' logs to stderr
	sticky    bool          // the proxy routes a session's requests to its replica
}

// cluster is one NATS server, the fake GitHub API, the replicas and the
// proxy in front of them, all on loopback.
type cluster struct {
	cfg   config
	dir   string
	nats  *natstest.Server
	gh    *fakegithub.Server
	proxy *proxy
	reps  []*replica
	// stateKeys is shared by every replica, as a load-balanced
	// deployment must: a sealed state from one is opened by another.
	stateKeys string
}

// newCluster starts everything and returns once every replica serves.
func newCluster(cfg config) (c *cluster, err error) {
	if cfg.replicas < 1 {
		return nil, errors.New("need at least one replica")
	}
	dir, err := os.MkdirTemp("", "testcluster-")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	c = &cluster{cfg: cfg, dir: dir}
	defer func() {
		if err != nil {
			c.close()
		}
	}()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("state key: %w", err)
	}
	c.stateKeys = base64.StdEncoding.EncodeToString(key)

	if c.nats, err = natstest.Run(filepath.Join(dir, "nats"), nil); err != nil {
		return nil, err
	}
	c.gh = fakegithub.New("acme", "prompts")
	if cfg.token != "" {
		c.gh.SetToken(cfg.token)
	}
	lib := fakegithub.GenerateLibrary(fakegithub.LibraryOptions{Valid: cfg.templates})
	c.gh.PutFiles(lib.Files)
	c.gh.Reset()

	// The proxy listens first: the replicas must be told its address to
	// accept the Host header it passes on.
	if c.proxy, err = newProxy(cfg.sticky); err != nil {
		return nil, err
	}
	for i := range cfg.replicas {
		r := &replica{id: "r" + strconv.Itoa(i+1), c: c}
		c.reps = append(c.reps, r)
		c.proxy.add(r.id)
	}
	// In parallel: the cold start of each replica is what is measured,
	// and one after another would triple the wait.
	errs := make([]error, len(c.reps))
	var wg sync.WaitGroup
	for i, r := range c.reps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = r.start()
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	c.proxy.startHealthChecks()
	return c, nil
}

func (c *cluster) replica(id string) *replica {
	for _, r := range c.reps {
		if r.id == id {
			return r
		}
	}
	return nil
}

// close ends the replicas (SIGTERM, then SIGKILL after a grace), the
// proxy, GitHub and NATS, and removes the temporary files.
func (c *cluster) close() {
	var wg sync.WaitGroup
	for _, r := range c.reps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.stop(3 * time.Second)
		}()
	}
	wg.Wait()
	if c.proxy != nil {
		c.proxy.close()
	}
	if c.gh != nil {
		c.gh.Close()
	}
	if c.nats != nil {
		c.nats.Stop()
	}
	os.RemoveAll(c.dir)
}

var servingRe = regexp.MustCompile(`serving over HTTP on (http://127\.0\.0\.1:(\d+))`)

// replica is one flowyprompt process; start again after a kill runs the
// same id on the same port and cache folder, like a restarted container.
type replica struct {
	id string
	c  *cluster
	// ops serialises start, kill and stop: two starts at once would race
	// for the same port.
	ops sync.Mutex

	mu     sync.Mutex
	cmd    *exec.Cmd
	port   int // kept across restarts, so the proxy's target is stable
	url    string
	exited chan struct{} // closed when the current process is reaped
	log    tail
}

func (r *replica) info() (url string, pid int, alive bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil && r.cmd.Process != nil {
		pid = r.cmd.Process.Pid
		select {
		case <-r.exited:
		default:
			alive = true
		}
	}
	return r.url, pid, alive
}

func (r *replica) env() []string {
	dir := filepath.Join(r.c.dir, r.id)
	var env []string
	// Only what a process needs: the developer's GITHUB_* or TEMPLATES_DIR
	// must not leak into the replicas.
	for _, k := range []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	env = append(env,
		"XDG_CACHE_HOME="+dir, "XDG_CONFIG_HOME="+dir,
		"FLOWYPROMPT_CACHE_DIR="+filepath.Join(dir, "cache"),
		"GITHUB_REPO_URL="+r.c.gh.RepoURL(),
		"GITHUB_API_URL="+r.c.gh.URL(),
		"GITHUB_REF=main",
		"CACHE_TTL_MS="+strconv.FormatInt(r.c.cfg.cacheTTL.Milliseconds(), 10),
		"FLOWYPROMPT_STATE_KEYS="+r.c.stateKeys,
		"LOG_LEVEL="+r.c.cfg.logLevel,
	)
	if r.c.cfg.token != "" {
		env = append(env, "GITHUB_PAT="+r.c.cfg.token)
	}
	return env
}

// start runs the process and waits until it serves; starting a live
// replica is an error.
func (r *replica) start() error {
	r.ops.Lock()
	defer r.ops.Unlock()
	if _, _, alive := r.info(); alive {
		return fmt.Errorf("replica %s is running", r.id)
	}
	if err := os.MkdirAll(filepath.Join(r.c.dir, r.id, "cache"), 0o700); err != nil {
		return fmt.Errorf("replica %s: %w", r.id, err)
	}
	r.mu.Lock()
	port := r.port
	r.mu.Unlock()
	proxyHost := r.c.proxy.host()
	cmd := exec.Command(r.c.cfg.bin, "serve", "--transport", "http",
		"--addr", "127.0.0.1:"+strconv.Itoa(port),
		"--nats", r.c.nats.URL(), "--replica-id", r.id,
		"--allowed-hosts", proxyHost+",localhost:"+portOf(proxyHost))
	cmd.Env = r.env()
	cmd.SysProcAttr = childAttrs()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return fmt.Errorf("replica %s: %w", r.id, err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("replica %s: start %s: %w", r.id, r.c.cfg.bin, err)
	}
	exited := make(chan struct{})
	served := make(chan string, 1)
	go r.readLog(stderr, served)
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	r.mu.Lock()
	r.cmd, r.exited = cmd, exited
	r.mu.Unlock()

	select {
	case m := <-served:
		p, _ := strconv.Atoi(servingRe.FindStringSubmatch(m)[2])
		r.mu.Lock()
		r.url, r.port = servingRe.FindStringSubmatch(m)[1], p
		r.mu.Unlock()
		r.c.proxy.setTarget(r.id, r.url)
		return nil
	case <-exited:
		return fmt.Errorf("replica %s exited before serving:\n%s", r.id, r.log.String())
	case <-time.After(startTimeout):
		_ = cmd.Process.Kill()
		return fmt.Errorf("replica %s did not serve within %s:\n%s", r.id, startTimeout, r.log.String())
	}
}

// readLog keeps the tail of the replica's log for the control API and
// failure messages, and reports the line naming its URL.
func (r *replica) readLog(rd io.Reader, served chan<- string) {
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	found := false
	for sc.Scan() {
		line := sc.Text()
		r.log.add(line)
		if r.c.cfg.verbose {
			fmt.Fprintf(os.Stderr, "[%s] %s\n", r.id, line)
		}
		if !found && servingRe.MatchString(line) {
			found = true
			served <- line
		}
	}
}

// kill sends SIGKILL: the replica gets no chance to hand anything over,
// as when its machine dies.
func (r *replica) kill() error {
	r.ops.Lock()
	defer r.ops.Unlock()
	r.mu.Lock()
	cmd, exited := r.cmd, r.exited
	r.mu.Unlock()
	if cmd == nil {
		return fmt.Errorf("replica %s never started", r.id)
	}
	// The proxy is not told: like a load balancer, it finds out from
	// its health checks or from a failed connection.
	_ = cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-exited:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("replica %s did not die within 5 s of SIGKILL", r.id)
	}
}

// stop asks the replica to shut down and kills it after grace.
func (r *replica) stop(grace time.Duration) {
	r.ops.Lock()
	defer r.ops.Unlock()
	r.mu.Lock()
	cmd, exited := r.cmd, r.exited
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(grace):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-exited
	}
}

// health reads the replica's /healthz.
func (r *replica) health(ctx context.Context) (int, []byte, error) {
	url, _, _ := r.info()
	if url == "" {
		return 0, nil, fmt.Errorf("replica %s has no URL yet", r.id)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/healthz", nil)
	if err != nil {
		return 0, nil, fmt.Errorf("health request: %w", err)
	}
	resp, err := healthClient.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("replica %s health: %w", r.id, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, nil, fmt.Errorf("replica %s health body: %w", r.id, err)
	}
	return resp.StatusCode, body, nil
}

// healthClient has connections of its own, so health checks never queue
// behind proxied requests.
var healthClient = &http.Client{Timeout: healthTimeout, Transport: &http.Transport{MaxIdleConnsPerHost: 4}}

func portOf(hostport string) string {
	_, p, _ := net.SplitHostPort(hostport)
	return p
}

// tail keeps the last bytes of a log.
type tail struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

const tailBytes = 64 << 10

func (t *tail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.WriteString(line)
	t.buf.WriteByte('\n')
	if t.buf.Len() > 2*tailBytes {
		b := t.buf.Bytes()
		keep := append([]byte(nil), b[len(b)-tailBytes:]...)
		t.buf.Reset()
		t.buf.Write(keep)
	}
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf.Bytes()
	if len(b) > tailBytes {
		b = b[len(b)-tailBytes:]
	}
	return string(b)
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/flowyprompt/flowyprompt/internal/fakegithub"
)

// The preview page's templates: Greet has a form of every kind and
// tests; Evil carries markup and script in every text the page shows;
// Broken.json is invalid.
const (
	previewGreet = `{"metadata":{"name":"Greet","description":"Greets someone, warmly or not.","version":"1.2.0"},
"variables":[
 {"name":"who","type":"string","description":"Who to greet.","required":true,"examples":["Ada"]},
 {"name":"tone","type":"string","description":"How it sounds.","enum":["warm","dry"],"default":"warm"},
 {"name":"loud","type":"boolean","description":"Shout it.","default":false},
 {"name":"topics","type":"array","description":"What to mention, one per line."},
 {"name":"times","type":"integer","description":"How many greetings.","default":"1"}],
"results":[{"name":"Greeting","content":"Hello {{who}} ({{tone}}), loud={{loud}}, times={{times}}\n{{topics}}"}],
"tests":[
 {"name":"names the person","arguments":{"who":"Ada"},"expect":{"contains":["Hello Ada"]}},
 {"name":"is dry on demand","arguments":{"who":"Ada","tone":"dry"},"expect":{"contains":["(warm)"]}}]}`
	previewEvil = `{"metadata":{"name":"Evil","description":"<script>window.__pwned = 'description'</script><img src=x onerror=\"window.__pwned = 'img'\">","version":"1.0.0"},
"variables":[{"name":"x","type":"string","description":"<b onmouseover=\"window.__pwned = 'var'\">x</b>","default":"<script>window.__pwned = 'value'</script>"}],
"results":[{"name":"Body","content":"Before <script>window.__pwned = 'prompt'</script> after {{x}}"}]}`
	previewBroken = `{"metadata":{"name":"Broken","description":"d","version":"1.0.0"},
"variables":[{"name":"x","type":"strin","description":"d"}],
"results":[{"name":"s","content":"{{x}}"}]}`
	previewFlow = `{"name":"Welcome","description":"Greets, then greets again.","steps":[{"name":"first","template":"Greet","variables":{"who":"{{who}}"}}],
"arguments":[{"name":"who","description":"who","required":true}]}`
)

// browserPath finds the Chromium the test drives: Debian's chromium
// package, or chromium-browser elsewhere.
func browserPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium on PATH (chromium or chromium-browser): the preview page is tested in a real browser; " +
		"install it (Debian: apt-get install chromium, which make test runs as root) and run the test again")
	return ""
}

// startPreview runs `flowyprompt preview` with args and the environment
// env, and returns the URL it prints; the process is interrupted when the
// test ends.
func startPreview(t *testing.T, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"preview"}, args...)...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("preview did not stop cleanly: %v\n%s", err, stderr.String())
			}
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("preview did not stop within 10 s of an interrupt")
		}
	})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`).FindString(sc.Text()); u != "" {
				select {
				case urls <- u:
				default:
				}
			}
		}
		done <- cmd.Wait()
	}()
	select {
	case u := <-urls:
		return u
	case <-time.After(30 * time.Second):
		t.Fatalf("preview printed no URL within 30 s: %s", stderr.String())
	}
	return ""
}

// TestPreviewInBrowser drives the page in headless Chromium: it lists the
// library, renders as the form is filled, shows an invalid file's problem,
// follows a file edited on disk, and shows markup as text. Then, on a
// GitHub repository with labels, it picks a label and is shown that
// label's text, the label in its URL; a link to a label shows it, and one
// to an unknown label shows the server's refusal. It writes the page's
// screenshot to docs/images/preview.png.
func TestPreviewInBrowser(t *testing.T) {
	browser := browserPath(t)
	dir := t.TempDir()
	for name, data := range map[string]string{"Greet.json": previewGreet, "Evil.json": previewEvil,
		"Broken.json": previewBroken, "flows/Welcome.json": previewFlow} {
		previewFile(t, filepath.Join(dir, name), data)
	}
	url := startPreview(t, serverEnv(t), "--templates", dir)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 860), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	// The first run starts the browser, which lives as long as its
	// context: that one has no deadline; each step below has its own.
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("cannot start %s: %v", browser, err)
	}
	// do runs steps that wait for the page, for at most d.
	do := func(t *testing.T, d time.Duration, what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		ctx, cancel := context.WithTimeout(bctx, d)
		defer cancel()
		if err := chromedp.Do(ctx, steps...); err != nil {
			// What the page showed says which step it missed.
			sctx, scancel := context.WithTimeout(bctx, 5*time.Second)
			defer scancel()
			shown, _ := chromedp.Run(sctx, chromedp.Evaluate[string](`location.href + '\n' + document.body.innerText.slice(0, 2000)`))
			t.Fatalf("%s: %v\nthe page at %s", what, err, shown)
		}
	}
	// read is what action reads of the page.
	read := func(t *testing.T, action chromedp.Action[string]) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(bctx, 10*time.Second)
		defer cancel()
		v, err := chromedp.Run(ctx, action)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	text := func(t *testing.T, sel string) string { return read(t, chromedp.TextContent(chromedp.CSS(sel))) }
	// rendered waits until the rendered prompt holds sub.
	rendered := func(sub string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Poll[bool](`document.getElementById('rendered').textContent.includes(`+jsString(sub)+`)`,
				chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(0))(ctx, tg)
			return err
		})
	}
	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }
	// emptyField empties a field, as selecting its text and deleting it would.
	emptyField := func(sel string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Evaluate[bool](`(document.querySelector(`+jsString(sel)+`).value = '', true)`)(ctx, tg)
			return err
		})
	}
	// until waits until the script js is true.
	until := func(js string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Poll[bool](js, chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(0))(ctx, tg)
			return err
		})
	}
	greet := `#templates button[data-name="Greet"]`

	do(t, 30*time.Second, "the page lists the library",
		chromedp.Navigate(url),
		chromedp.WaitVisible(css(greet)),
		chromedp.WaitVisible(css(`#invalid li[data-path="Broken.json"]`)),
	)
	list := text(t, "#sidebar")
	for _, want := range []string{"Greet", "Evil", "flow:Welcome", "Greets, then greets again."} {
		if !strings.Contains(list, want) {
			t.Errorf("the list lacks %q:\n%s", want, list)
		}
	}
	if inv := text(t, `#invalid li[data-path="Broken.json"]`); !strings.Contains(inv, "/variables/0/type") || !strings.Contains(inv, "INVALID_TEMPLATE") {
		t.Errorf("the invalid file shows no problem at its JSON pointer:\n%s", inv)
	}

	do(t, 20*time.Second, "filling the form renders the prompt",
		chromedp.Click(css(greet)),
		rendered("Hello Ada (warm), loud=false, times=1"),
		emptyField(`#form [name="who"]`),
		chromedp.SendKeys(css(`#form [name="who"]`), "Grace"),
		chromedp.Click(css(`#form [name="loud"]`)),
		chromedp.SendKeys(css(`#form [name="topics"]`), "tea\ncake"),
		rendered("Hello Grace (warm), loud=true, times=1\ntea\ncake"),
	)
	// Each variable gets the field its type calls for.
	kinds := read(t, chromedp.Evaluate[string](`Array.from(document.getElementById('form').elements, (e) =>
		e.name + ':' + e.tagName.toLowerCase() + (e.type && e.tagName === 'INPUT' ? '/' + e.type : '') +
		(e.tagName === 'SELECT' ? '[' + Array.from(e.options, (o) => o.value).join('|') + ']' : '')).join(' ')`))
	if want := "who:textarea tone:select[|warm|dry] loud:input/checkbox topics:textarea times:input/number"; kinds != want {
		t.Errorf("the form's fields are %q, want %q", kinds, want)
	}
	if tests := text(t, "#tests"); !strings.Contains(tests, "names the person") || !strings.Contains(tests, "is dry on demand: the text does not contain") {
		t.Errorf("the tests' results:\n%s", tests)
	}

	// The page follows the file, and the form keeps what was typed. How
	// long that took is logged, not asserted: the test waits for the
	// page, and a busy machine's delay is no failure of it.
	previewFile(t, filepath.Join(dir, "Greet.json"), strings.Replace(previewGreet, "Greets someone,", "Greets someone by name,", 1))
	start := time.Now()
	do(t, 10*time.Second, "an edited file reaches the page", rendered("Greets someone by name, warmly or not."))
	do(t, 10*time.Second, "the form keeps its values", rendered("Hello Grace (warm), loud=true"))
	t.Logf("the page followed the edited file in %s", time.Since(start).Round(time.Millisecond))

	do(t, 20*time.Second, "markup is shown as text",
		chromedp.Click(css(`#templates button[data-name="Evil"]`)),
		rendered("Before <script>window.__pwned = 'prompt'</script> after <script>window.__pwned = 'value'</script>"),
	)
	pwned := read(t, chromedp.Evaluate[string](`String(typeof window.__pwned) + (document.querySelector('main img, main b, #sidebar img, #sidebar script, main script') ? ' and markup was parsed' : '')`))
	if pwned != "undefined" {
		t.Errorf("a script of the template ran or its markup was parsed: window.__pwned is %s", pwned)
	}
	if d := text(t, "#t-description"); !strings.Contains(d, `<img src=x onerror="window.__pwned = 'img'">`) {
		t.Errorf("the description is not shown as text: %q", d)
	}
	if v := read(t, chromedp.Value(css(`#form [name="x"]`))); v != "<script>window.__pwned = 'value'</script>" {
		t.Errorf("the default value is not shown as text: %q", v)
	}

	do(t, 20*time.Second, "back to Greet", chromedp.Click(css(greet)), rendered("by name, warmly or not."), rendered("Hello Grace (warm), loud=true, times=1\ntea\ncake"))

	// A template's detail answered after another was picked is dropped:
	// Greet's is held until Evil is shown, then let go. Whatever the page
	// does with it runs before a timer set after it fires.
	read(t, chromedp.Evaluate[string](`(() => {
		const real = window.fetch;
		window.__held = [];
		window.__unhold = () => { window.fetch = real; window.__held.splice(0).forEach((go) => go()); };
		window.fetch = (url, init) => !String(url).includes('api/template?name=Greet') ? real(url, init) :
			real(url, init).then((r) => r.json().then((body) => {
				const held = new Promise((go) => window.__held.push(() => go(body)));
				return { ok: r.ok, statusText: r.statusText, json: () => held };
			}));
		return '';
	})()`))
	do(t, 20*time.Second, "Greet picked, its answer held, then Evil",
		chromedp.Click(css(`#templates button[data-name="Evil"]`)), until(`document.getElementById('t-name').textContent === 'Evil'`),
		chromedp.Click(css(greet)), until(`window.__held.length > 0`),
		chromedp.Click(css(`#templates button[data-name="Evil"]`)), until(`document.querySelector('#templates button[data-name="Evil"]').getAttribute('aria-current') === 'true'`))
	if shown := read(t, chromedp.Evaluate[string](`new Promise((done) => {
		window.__unhold();
		setTimeout(() => done(document.getElementById('t-name').textContent), 0);
	})`, chromedp.EvalAwaitPromise)); shown != "Evil" {
		t.Errorf("Greet's late answer replaced Evil, the template picked: %q is shown", shown)
	}
	do(t, 20*time.Second, "back to Greet again", chromedp.Click(css(greet)), rendered("Hello Grace (warm), loud=true, times=1\ntea\ncake"))

	// Labels: production serves main, staging the branch staging, where
	// Greet says good morning first.
	fake := fakegithub.New("acme", "prompts")
	t.Cleanup(fake.Close)
	repoFiles := func(greet string) map[string][]byte {
		return map[string][]byte{"templates/Greet.json": []byte(greet), "templates/Broken.json": []byte(previewBroken),
			"templates/flows/Welcome.json": []byte(previewFlow)}
	}
	fake.SetBranch("staging", fake.CommitFiles("staging", repoFiles(strings.Replace(previewGreet, `"content":"Hello`, `"content":"Good morning! Hello`, 1))))
	fake.CommitFiles("production", repoFiles(previewGreet))
	labelled := startPreview(t, serverEnv(t, "GITHUB_API_URL="+fake.URL(), "FLOWYPROMPT_CACHE_DIR="+t.TempDir()),
		"--github-repo", fake.RepoURL(), "--github-labels", "production:main+staging:staging")
	labelIs := func(l string) chromedp.Action[chromedp.Void] {
		return until(`!document.getElementById('label-box').hidden && document.getElementById('label').value === ` + jsString(l))
	}
	// pickLabel picks l in the page's choice of label, as a person would.
	pickLabel := func(l string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Evaluate[bool](`(() => { const s = document.getElementById('label'); s.focus(); s.value = `+jsString(l)+
				`; s.dispatchEvent(new Event('change')); return true; })()`)(ctx, tg)
			return err
		})
	}
	do(t, 30*time.Second, "the page of a repository with labels shows the default",
		chromedp.Navigate(labelled),
		chromedp.WaitVisible(css(greet)),
		labelIs("production"),
		rendered("Hello Ada (warm), loud=false, times=1"),
	)
	if got := read(t, chromedp.Evaluate[string](`Array.from(document.getElementById('label').options, (o) => o.value).join(' ')`)); got != "production staging" {
		t.Errorf("the labels offered are %q, want production and staging", got)
	}
	do(t, 20*time.Second, "picking staging shows staging's text",
		pickLabel("staging"),
		rendered("Good morning! Hello Ada (warm), loud=false, times=1"),
		emptyField(`#form [name="who"]`),
		chromedp.SendKeys(css(`#form [name="who"]`), "Grace"),
		chromedp.SendKeys(css(`#form [name="topics"]`), "tea\ncake"),
		rendered("Good morning! Hello Grace (warm), loud=false, times=1\ntea\ncake"),
		chromedp.WaitVisible(css(`#invalid li[data-path="templates/Broken.json"]`)),
	)
	if q := read(t, chromedp.Evaluate[string](`location.search`)); q != "?label=staging" {
		t.Errorf("the page's URL holds %q, want ?label=staging", q)
	}
	// The screenshot has the same pixels from run to run: no caret, and
	// the clock of the last update blanked.
	read(t, chromedp.Evaluate[string](`document.activeElement.blur(), document.getElementById('status').textContent = ''`))
	ctx, cancel := context.WithTimeout(bctx, 20*time.Second)
	defer cancel()
	shot, err := chromedp.Run(ctx, chromedp.Screenshot(css("body")))
	if err != nil {
		t.Fatal(err)
	}
	writeScreenshot(t, filepath.Join("..", "..", "docs", "images", "preview.png"), shot)

	// Each navigation goes to a URL other than the page's own.
	do(t, 20*time.Second, "a link to an unknown label shows the refusal",
		chromedp.Navigate(labelled+"?label=nope"),
		chromedp.WaitVisible(css("#page-error")),
	)
	if e := text(t, "#page-error"); !strings.Contains(e, `UNKNOWN_LABEL: unknown label "nope"`) || !strings.Contains(e, "production, staging") {
		t.Errorf("the refusal of an unknown label: %q", e)
	}
	if list := text(t, "#templates"); list != "" {
		t.Errorf("an unknown label shows templates: %q", list)
	}
	do(t, 20*time.Second, "picking a label after the refusal shows it", pickLabel("production"), labelIs("production"), rendered("Hello Ada (warm)"))
	do(t, 20*time.Second, "a link to a label shows that label",
		chromedp.Navigate(labelled+"?label=staging"),
		labelIs("staging"),
		rendered("Good morning! Hello Ada (warm)"),
	)
}

// writeScreenshot writes shot to path unless the image there has the same
// pixels already, so that a run that sees the same page leaves the file
// alone.
func writeScreenshot(t *testing.T, path string, shot []byte) {
	t.Helper()
	got, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	if old, err := os.ReadFile(path); err == nil {
		if prev, err := png.Decode(bytes.NewReader(old)); err == nil && samePixels(prev, got) {
			return
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
}

func samePixels(a, b image.Image) bool {
	if a.Bounds() != b.Bounds() {
		return false
	}
	r := a.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if a.At(x, y) != b.At(x, y) {
				return false
			}
		}
	}
	return true
}

// jsString is s as a JavaScript string literal (JSON's).
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// previewFile writes a file of the library, with its folders.
func previewFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

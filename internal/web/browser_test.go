package web_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/internal/fake"
)

// chromiumPaths are the browsers the tests run in, the first one found:
// Debian's chromium-headless-shell, which CI installs (Chromium's engine
// without the browser around it, made for driving: the package's tests
// take half the CPU in it that they took in the whole browser, whose own
// pages and processes ran beside each test's), and Debian's chromium.
var chromiumPaths = []string{"/usr/bin/chromium-headless-shell", "/usr/bin/chromium"}

// chromiumPath is the first of chromiumPaths installed, or the first.
var chromiumPath = sync.OnceValue(func() string {
	for _, p := range chromiumPaths {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return chromiumPaths[0]
})

// browser is a page of its own in the test binary's headless chromium,
// in a browser context of its own (cookies, storage and cache as in a
// fresh profile), closed when the test ends. Screenshots go under dir: a
// folder per test in $MCPGATE_SCREENSHOT_DIR when that is set (.ci/run
// sets it, outside the repository), else the test's temp dir, which a
// failing test copies somewhere that survives it, saying where. They are
// taken only where someone will see them: with $MCPGATE_SCREENSHOT_DIR or
// $MCPGATE_KEEP_SCREENSHOTS set, and the one of a failure always. Taken
// and thrown away, the tests' thirty-odd full-page PNGs were a fifth of
// the package's time.
type browser struct {
	t     *testing.T
	ctx   context.Context
	dir   string
	kept  bool // dir outlives the test
	shots bool // the steps' screenshots are taken
	n     int
}

// chromium is the one browser process of this test binary, started by
// the first test that needs it and ended by TestMain after the tests:
// starting one per test cost each about a second of CPU.
var chromium struct {
	once   sync.Once
	ctx    context.Context // the browser's; tests make their contexts under it
	cancel func()
	err    error
}

func startChromium() {
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath()),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("no-proxy-server", true),
		chromedp.WindowSize(1280, 900),
	}
	profile, err := os.MkdirTemp("", "mcpgate-web-chromium-")
	if err != nil {
		chromium.err = err
		return
	}
	opts = append(opts, chromedp.UserDataDir(profile))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelCtx := chromedp.NewContext(actx)
	chromium.ctx = bctx
	chromium.cancel = func() {
		cancelCtx()
		cancelAlloc() // waits for the process to end
		os.RemoveAll(profile)
	}
	// The first Run starts the browser, which lives as long as that call's
	// context: no timeout on it.
	if chromium.err = chromedp.Do(bctx); chromium.err != nil {
		chromium.cancel()
	}
}

// closingChromium runs m's tests, then ends the browser, before goleak
// looks for goroutines left running.
type closingChromium struct{ m *testing.M }

func (c closingChromium) Run() int {
	code := c.m.Run()
	if chromium.cancel != nil {
		chromium.cancel()
	}
	return code
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	if _, err := os.Stat(chromiumPath()); err != nil {
		if os.Getenv("CI") != "" {
			// .ci/run installs it: missing there is a broken CI, not a skip.
			t.Fatalf("no browser in CI at %s (.ci/run must apt-get install chromium-headless-shell): %v", strings.Join(chromiumPaths, " or "), err)
		}
		t.Skipf("no browser at %s (apt-get install chromium-headless-shell, or chromium): %v", strings.Join(chromiumPaths, " or "), err)
	}
	chromium.once.Do(startChromium)
	if chromium.err != nil {
		t.Fatalf("starting %s: %v", chromiumPath(), chromium.err)
	}
	bctx, cancelCtx := chromedp.NewContext(chromium.ctx, chromedp.WithNewBrowserContext())
	if err := chromedp.Do(bctx); err != nil {
		cancelCtx()
		t.Fatalf("opening a page in %s: %v", chromiumPath(), err)
	}
	ctx, cancelTimeout := context.WithTimeout(bctx, 90*time.Second)
	b := &browser{t: t, ctx: ctx, dir: t.TempDir(), shots: os.Getenv("MCPGATE_KEEP_SCREENSHOTS") != ""}
	if root := os.Getenv("MCPGATE_SCREENSHOT_DIR"); root != "" {
		dir := filepath.Join(root, strings.NewReplacer("/", "-", " ", "_").Replace(t.Name()))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatalf("screenshot folder: %v", err)
		}
		old, _ := filepath.Glob(filepath.Join(dir, "*.png"))
		for _, f := range old {
			_ = os.Remove(f) // a previous run's: only this run's are there
		}
		b.dir, b.kept, b.shots = dir, true, true
	}
	t.Cleanup(func() {
		if t.Failed() {
			b.capture("failure")
		}
		if !b.kept && (t.Failed() || os.Getenv("MCPGATE_KEEP_SCREENSHOTS") != "") {
			b.keep()
		}
		cancelTimeout()
		cancelCtx()
	})
	return b
}

// run runs actions, failing the test (with a screenshot) on error.
func (b *browser) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// get runs an action that returns a value, failing the test on error.
func get[T any](b *browser, what string, a chromedp.Action[T]) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, a)
	if err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
	return v
}

// press clicks the element sel as soon as it exists, finding and clicking
// it in one step in the page: cards are redrawn on every change, and a
// node found by one command can be gone by the next.
func press(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return false; e.click(); return true; })()`, sel))
}

// waitText waits until the element sel exists and its text contains want.
// The page redraws cards on every change, so reading a node once can catch
// it as it is replaced.
func (b *browser) waitText(sel, want string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && e.textContent.includes(%q); })()`, sel, want)
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](js)); err != nil {
		got, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || "(none)"`, sel)))
		b.t.Fatalf("%s: want text containing %q, have %q (%v)", sel, want, got, err)
	}
}

// shot saves a full-page screenshot of the step name, when the steps'
// screenshots are taken.
func (b *browser) shot(name string) {
	if b.shots {
		b.capture(name)
	}
}

// capture saves a full-page screenshot as NN-name.png.
func (b *browser) capture(name string) {
	b.n++
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	p := filepath.Join(b.dir, fmt.Sprintf("%02d-%s.png", b.n, name))
	if err := os.WriteFile(p, png, 0o600); err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	b.t.Log("screenshot: " + p)
}

// keep copies the screenshots out of the test's temp dir, which is
// removed when it ends: always for a failing test, and for every test
// when $MCPGATE_KEEP_SCREENSHOTS is set.
func (b *browser) keep() {
	dst, err := os.MkdirTemp("", "mcpgate-ui-"+b.t.Name()+"-")
	if err != nil {
		return
	}
	files, _ := filepath.Glob(filepath.Join(b.dir, "*.png"))
	for _, f := range files {
		if data, err := os.ReadFile(f); err == nil {
			_ = os.WriteFile(filepath.Join(dst, filepath.Base(f)), data, 0o600)
		}
	}
	b.t.Logf("screenshots kept in %s", dst)
}

// TestBrowserAddServerAndDisableTool: add a server on the page, see it
// become ready, open its catalog, switch a tool off and find it gone from
// the gateway's list; then the same page at 360 px wide.
func TestBrowserAddServerAndDisableTool(t *testing.T) {
	srv := fake.Start(t, nil)
	e := newEnv(t)
	b := newBrowser(t)
	echo := regexp.MustCompile(`(?m)\becho\b`)

	b.run("opening the page", chromedp.Navigate(e.page.URL()), chromedp.WaitVisible(chromedp.CSS("#add-form")))
	loc := get(b, "reading the address", chromedp.Location())
	if strings.Contains(loc, "token=") {
		t.Errorf("the token stays in the address bar: %s", loc)
	}
	b.shot("empty")

	b.run("adding a server",
		chromedp.SendKeys(chromedp.CSS("#add-id"), "docs"),
		chromedp.SendKeys(chromedp.CSS("#add-url"), srv.URL),
		chromedp.Click(chromedp.CSS("#add-submit")),
		chromedp.WaitVisible(chromedp.CSS(`#server-docs[data-state="ready"]`)),
	)
	b.waitText(`#server-docs .counts`, "8 tools")
	b.shot("ready")

	b.run("opening the catalog",
		press(`#server-docs button[data-action="catalog"]`),
		chromedp.WaitVisible(chromedp.CSS(`#server-docs li.tool[data-tool="echo"] input.tool-switch`)),
	)
	b.waitText(`#server-docs li.tool[data-tool="echo"] .desc`, "Echoes the given text back.")
	if !echo.MatchString(e.gatewayList("docs")) {
		t.Fatal("echo is not in the gateway's list to begin with")
	}
	b.shot("catalog")

	b.run("switching echo off",
		press(`#server-docs li.tool[data-tool="echo"] input.tool-switch`),
		chromedp.WaitVisible(chromedp.CSS(`#server-docs li.tool.off[data-tool="echo"]`)),
	)
	if list := e.gatewayList("docs"); echo.MatchString(list) {
		t.Errorf("echo is still in the gateway's list:\n%s", list)
	}
	b.shot("echo-off")

	// Narrow screen: nothing wider than the viewport.
	b.run("narrowing to 360 px", chromedp.EmulateViewport(360, 800), chromedp.Sleep(100*time.Millisecond))
	width := get(b, "measuring the page", chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
	if width > 360 {
		t.Errorf("at 360 px the page is %d px wide", width)
	}
	b.shot("narrow")

	// Dark scheme: the page follows it.
	light := get(b, "reading the light background", chromedp.Evaluate[string](`getComputedStyle(document.body).backgroundColor`))
	b.run("switching to dark", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}},
		})
		return err
	}))
	if dark := get(b, "reading the dark background", chromedp.Evaluate[string](`getComputedStyle(document.body).backgroundColor`)); dark == light {
		t.Errorf("the background stays %s in the dark scheme", dark)
	}
	b.shot("dark")

	// Remove, with confirmation.
	b.run("removing",
		press(`#server-docs button[data-action="remove"]`),
		chromedp.WaitVisible(chromedp.CSS(`#server-docs button[data-action="remove-confirm"]`)),
		press(`#server-docs button[data-action="remove-confirm"]`),
		chromedp.WaitVisible(chromedp.CSS(`#empty`)),
	)
	if _, err := e.m.Status("docs"); err == nil {
		t.Error("docs is still in the manager")
	}
	b.shot("removed")
}

// TestBrowserImportReportsSkippedEntries: a pasted Claude Code file with a
// remote and a stdio entry previews both, the stdio one as skipped with its
// reason; confirming brings in the remote one.
func TestBrowserImportReportsSkippedEntries(t *testing.T) {
	srv := fake.Start(t, nil)
	e := newEnv(t)
	b := newBrowser(t)
	claude := `{"mcpServers": {"remote": {"type": "http", "url": "` + srv.URL + `", "headers": {"X-Team": "${TEAM_ID:-none}"}}, "local": {"command": "npx", "args": ["-y", "some-server"]}}}`

	b.run("opening the page", chromedp.Navigate(e.page.URL()), chromedp.WaitVisible(chromedp.CSS("#import-form")))
	b.run("previewing",
		chromedp.SetValue(chromedp.CSS("#import-text"), claude),
		chromedp.Click(chromedp.CSS("#import-preview")),
		chromedp.WaitVisible(chromedp.CSS(`#import-result li[data-skipped="local"]`)),
	)
	b.waitText(`#import-result li[data-skipped="local"]`, "stdio servers are not supported")
	b.run("seeing what comes in", chromedp.WaitVisible(chromedp.CSS(`#import-result li[data-import="remote"]`)))
	if _, err := e.m.Status("remote"); err == nil {
		t.Fatal("the preview imported something")
	}
	b.waitText(`#import-result li[data-import="remote"]`, "reads $TEAM_ID")
	b.shot("preview")
	// Until the person allows the variable, the import is refused.
	b.run("confirming without allowing the variable", chromedp.Click(chromedp.CSS("#import-confirm")))
	b.waitText("#import-result #import-confirm-error", "TEAM_ID") // beside the button, not only at the top
	if _, err := e.m.Status("remote"); err == nil {
		t.Fatal("imported with the variable not allowed")
	}
	b.run("confirming",
		chromedp.Click(chromedp.CSS("#import-allow-env")),
		chromedp.Click(chromedp.CSS("#import-confirm")),
		chromedp.WaitVisible(chromedp.CSS(`#server-remote`)),
	)
	if _, err := e.m.Status("remote"); err != nil {
		t.Errorf("not imported: %v", err)
	}
	if _, err := e.m.Status("local"); err == nil {
		t.Error("the stdio entry was imported")
	}
	b.shot("imported")
}

// TestBrowserSignIn: the card of an OAuth server says to sign in; the
// button opens a tab that goes through the authorization server back to
// mcpgate, and the card shows the outcome and becomes ready.
func TestBrowserSignIn(t *testing.T) {
	as := fake.StartAuth(t, nil)
	srv := fake.Start(t, &fake.Options{Auth: as})
	e := newEnv(t, mcpgate.ServerConfig{ID: "secure", URL: srv.URL, Auth: mcpgate.AuthOAuth, Enabled: true})
	b := newBrowser(t)

	b.run("opening the page", chromedp.Navigate(e.page.URL()), chromedp.WaitVisible(chromedp.CSS("#server-secure")))
	b.run("connecting",
		press(`#server-secure button[data-action="connect"]`),
		chromedp.WaitVisible(chromedp.CSS(`#server-secure[data-state="needs-auth"] .problem-next`)),
	)
	b.waitText(`#server-secure .problem-next`, "Sign in")
	b.shot("needs-auth")
	b.run("signing in",
		press(`#server-secure button[data-action="signin"]`),
		chromedp.WaitVisible(chromedp.CSS(`#server-secure[data-state="ready"] .login-done`)),
	)
	b.waitText(`#server-secure .login-msg`, "Signed in with "+as.Issuer)
	html := get(b, "reading the page", chromedp.OuterHTML(chromedp.CSS("html")))
	for _, s := range as.Secrets() {
		if strings.Contains(html, s) {
			t.Errorf("the page shows a secret")
		}
	}
	b.shot("signed-in")
}

// TestBrowserAnswerElicitationCard: a server's question during a call is a
// card, still there after a reload, with the defaults filled in; sending
// it completes the call with the answer.
func TestBrowserAnswerElicitationCard(t *testing.T) {
	srv := fake.Start(t, nil)
	e := newEnv(t, mcpgate.ServerConfig{ID: "docs", URL: srv.URL, Auth: mcpgate.AuthNone, Enabled: true})
	b := newBrowser(t)
	b.run("opening the page", chromedp.Navigate(e.page.URL()), chromedp.WaitVisible(chromedp.CSS("#server-docs")))
	done := e.callAsync(context.Background(), "docs", "ask")
	card := `form.pending[data-server="docs"]`
	b.run("seeing the card", chromedp.WaitVisible(chromedp.CSS(card+` input[name="name"]`)))
	b.run("reloading", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(card+` input[name="name"]`)))
	if v := get(b, "reading the default", chromedp.Value(chromedp.CSS(card+` input[name="name"]`))); v != "Ada" {
		t.Errorf("name field shows %q, want the default Ada", v)
	}
	b.waitText(card+` .question`, fake.AskMessage)
	b.shot("card")
	b.run("answering",
		chromedp.SetValue(chromedp.CSS(card+` input[name="name"]`), "Grace"),
		chromedp.Click(chromedp.CSS(card+` button[data-action="accept"]`)),
		chromedp.WaitNotPresent(chromedp.CSS(card)),
	)
	select {
	case r := <-done:
		if r.err != nil || !strings.Contains(resultText(r.res), "Grace") {
			t.Errorf("call: %v %+v", r.err, r.res)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the call did not complete")
	}
	b.shot("answered")

	// The call is in the request log drawer and in its export.
	b.run("opening the log",
		chromedp.Click(chromedp.CSS("#log-toggle")),
		chromedp.WaitVisible(chromedp.CSS("#log-rows td")),
	)
	b.run("waiting for the call", chromedp.Poll[chromedp.Void](`Array.from(document.querySelectorAll("#log-rows tr")).some(r => r.textContent.includes("tools/call") && r.textContent.includes("ask"))`))
	b.shot("log")
	export := get(b, "fetching the export", chromedp.Evaluate[string](`fetch(document.querySelector("#log-export").href).then(r => r.text())`, chromedp.EvalAwaitPromise))
	if !strings.Contains(export, `"tool":"ask"`) {
		t.Errorf("the export lacks the call: %s", export)
	}
}

// TestBrowserMultiSelectCard: a multi-select field is a box per choice
// showing the choice's title, and the answer is the list of values ticked.
func TestBrowserMultiSelectCard(t *testing.T) {
	e := newEnv(t)
	e.putQuestion("multi", `{"type":"object","properties":{
		"colours":{"type":"array","title":"Colours","items":{"anyOf":[{"const":"r","title":"Red"},{"const":"g","title":"Green"},{"const":"b","title":"Blue"}]},"default":["b"]}
	},"required":["colours"]}`)
	b := newBrowser(t)
	card := `form.pending[data-server="demo"]`
	b.run("opening the page", chromedp.Navigate(e.page.URL()), chromedp.WaitVisible(chromedp.CSS(card+` input[name="colours"][value="g"]`)))
	b.waitText(card+` fieldset[data-field="colours"]`, "Green")
	b.shot("multi-select")
	b.run("answering",
		chromedp.Click(chromedp.CSS(card+` input[name="colours"][value="r"]`)),
		chromedp.Click(chromedp.CSS(card+` button[data-action="accept"]`)),
		chromedp.WaitNotPresent(chromedp.CSS(card)),
	)
	a := e.storedAnswer("multi", 5*time.Second)
	if a == nil || a.Action != "accept" || fmt.Sprint(a.Content["colours"]) != "[r b]" {
		t.Errorf("answer: %+v", a)
	}
}

// TestBrowserQuestionPage: the page serve --http links a question to
// works in a browser, which runs no script on it: the defaults are there,
// it fits 375 px and follows the dark scheme, and the form the person
// fills in reaches the store typed, through the browser's own Origin and
// Sec-Fetch-Site.
func TestBrowserQuestionPage(t *testing.T) {
	p := newQPage(t)
	p.put("q", everyKind)
	b := newBrowser(t)
	in := func(name string) chromedp.CSS { return chromedp.CSS(`[name="field.` + name + `"]`) }
	b.run("opening the question", chromedp.Navigate(p.srv.URL+"/questions/q"), chromedp.WaitVisible(in("name")))
	if v := get(b, "reading the default", chromedp.Value(in("name"))); v != "Ada" {
		t.Errorf("name shows %q, want the default Ada", v)
	}
	b.shot("desktop")

	b.run("narrowing to 375 px", chromedp.EmulateViewport(375, 800))
	if width := get(b, "measuring the page", chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); width > 375 {
		t.Errorf("at 375 px the page is %d px wide", width)
	}
	b.shot("narrow")
	light := get(b, "reading the light background", chromedp.Evaluate[string](`getComputedStyle(document.body).backgroundColor`))
	b.run("switching to dark", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}},
		})
		return err
	}))
	if dark := get(b, "reading the dark background", chromedp.Evaluate[string](`getComputedStyle(document.body).backgroundColor`)); dark == light {
		t.Errorf("the background stays %s in the dark scheme", dark)
	}
	b.shot("dark")

	b.run("answering",
		chromedp.SetValue(in("name"), "Grace"),
		chromedp.SetValue(in("age"), "85"),
		chromedp.Click(chromedp.CSS(`input[name="field.size"][value="l"]`)),
		chromedp.Click(chromedp.CSS(`input[name="field.toppings"][value="ham"]`)),
		chromedp.Click(in("agree")), // ticked by default: now not
		chromedp.Click(chromedp.CSS(`button[value="accept"]`)),
		chromedp.WaitVisible(chromedp.CSS("#notice")),
	)
	b.waitText("#notice", "Your answer went to demo")
	b.shot("sent")
	want := map[string]any{"name": "Grace", "age": 85.0, "ratio": 0.5, "size": "l", "city": "Rome",
		"toppings": []any{"ham", "olives"}, "agree": false, "news": false}
	if a := p.answer("q"); a == nil || a.Action != "accept" || !cmp.Equal(a.Content, want) {
		t.Errorf("stored %+v, want content %v", a, want)
	}
}

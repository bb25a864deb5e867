package webui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/engramdb/engram/cmd/engram/internal/httpapi"
	"github.com/engramdb/engram/memory"
)

// The browser tests drive a real headless Chromium (Debian's chromium
// package, which .ci/run installs under CI) with chromedp against the
// inspector in front of the HTTP API over an in-memory store. Without a
// browser they skip with a message; ENGRAM_CHROMIUM names one elsewhere.
//
// Each test starts its own browser with a fresh profile, so no cookie or
// storage leaks between tests, and runs under a deadline (browserTimeout,
// or the test binary's own when that is sooner) so that a hang fails the
// test instead of stalling CI.

// browserTimeout bounds one browser test, start-up included.
const browserTimeout = 3 * time.Minute

// browserWait bounds one wait for the page to reach a state.
const browserWait = 15 * time.Second

// browserStartTimeout bounds starting the browser.
const browserStartTimeout = 60 * time.Second

// browserPath finds the browser: $ENGRAM_CHROMIUM, then chromium and
// chromium-browser on PATH. It returns "" when there is none, and fails
// the test when ENGRAM_CHROMIUM names no program (.ci/run sets it to the
// browser it found, so that a broken setting is an error, not a skip).
func browserPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("ENGRAM_CHROMIUM"); p != "" {
		lp, err := exec.LookPath(p)
		if err != nil {
			t.Fatalf("ENGRAM_CHROMIUM=%s: %v", p, err)
		}
		return lp
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browserLog is a log sink safe for the server's goroutines.
type browserLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *browserLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *browserLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// browserEnv is one test's server, store and browser tab.
type browserEnv struct {
	t     *testing.T
	store *memory.Store
	seed  *browserSeed
	url   string
	// apiLog and uiLog are the access log of the API and the inspector's
	// own log.
	apiLog, uiLog *browserLog
	// ctx is the tab's context, with the test's deadline.
	ctx context.Context

	mu struct {
		sync.Mutex
		// exceptions are uncaught JavaScript errors; csp the CSP
		// violations (from the browser's log and from the
		// securitypolicyviolation event); console the console's error
		// and warning lines.
		exceptions, csp, console []string
	}
}

// browserOptions changes how newBrowserEnv sets the tab up.
type browserOptions struct {
	// bypassCSP turns the page's Content-Security-Policy off, so that the
	// escaping test checks escaping alone: markup that reached the DOM
	// would run.
	bypassCSP bool
	// seed replaces seedBrowserStore.
	seed func(*testing.T, *memory.Store) *browserSeed
}

// cspProbe runs in every document before the page's own scripts (a script
// added through the DevTools protocol is not subject to the page's CSP)
// and reports each violation on the console, where the listener sees it.
const cspProbe = `document.addEventListener("securitypolicyviolation", function (e) {
	console.error("engram-test csp violation: " + e.violatedDirective + " blocked " + e.blockedURI + " at " + e.sourceFile + ":" + e.lineNumber);
}, true);`

// fetchProbe counts the page's requests in flight, each until 50 ms after
// it settles (time for the page to read the answer and draw it), so that
// click can wait until what the last action set off has landed: a page
// that answers an action by reloading the graph and reopening a panel
// replaces the elements a click computed too early would hit
// (TestBrowserWalkthrough and TestBrowserDeletes failed so under load).
const fetchProbe = `(() => {
	const fetch0 = window.fetch;
	window.__engramPending = 0;
	window.fetch = function (...args) {
		window.__engramPending++;
		const done = () => setTimeout(() => { window.__engramPending--; }, 50);
		const p = fetch0.apply(this, args);
		p.then(done, done);
		return p;
	};
})();`

// newBrowserEnv starts the server over a seeded in-memory store and a
// headless browser, or skips the test when there is no browser.
func newBrowserEnv(t *testing.T, opts *browserOptions) *browserEnv {
	t.Helper()
	if opts == nil {
		opts = &browserOptions{}
	}
	exe := browserPath(t)
	if exe == "" {
		t.Skip("no Chromium: install Debian's chromium package (.ci/run does under CI) or set ENGRAM_CHROMIUM to a Chromium or Chrome binary")
	}
	store, err := memory.Open("", &memory.Options{Extraction: memory.ExtractOff})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := store.Close(); err != nil {
			t.Error(err)
		}
	})
	seedFn := opts.seed
	if seedFn == nil {
		seedFn = seedBrowserStore
	}
	b := &browserEnv{t: t, store: store, apiLog: &browserLog{}, uiLog: &browserLog{}}
	b.seed = seedFn(t, store)

	tokens, err := httpapi.ParseTokens([]byte(`{"tokens":[` +
		`{"token":"` + browserTokenAcme + `","tenant":"acme","name":"alice-laptop"},` +
		`{"token":"` + browserTokenGlobex + `","tenant":"globex","name":"gina-desk"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	api, err := httpapi.New(store, &httpapi.Options{Tokens: tokens, Logger: slog.New(slog.NewJSONHandler(b.apiLog, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ui, err := New(api, tokens, &Options{Logger: slog.New(slog.NewJSONHandler(b.uiLog, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(ui)
	t.Cleanup(srv.Close) // after the browser's cleanup below: cleanups run last first
	b.url = srv.URL

	deadline := time.Now().Add(browserTimeout)
	if d, ok := t.Deadline(); ok && d.Add(-10*time.Second).Before(deadline) {
		deadline = d.Add(-10 * time.Second)
	}
	allocOpts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 800),
		chromedp.DisableGPU,
		chromedp.Flag("lang", "en-US"),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("font-render-hinting", "none"),
	)
	if os.Geteuid() == 0 {
		// Chromium refuses to run as root with its sandbox (CI runs as root).
		allocOpts = append(allocOpts, chromedp.NoSandbox)
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), allocOpts...)
	tabCtx, cancelTab := chromedp.NewContext(allocCtx, chromedp.WithListener(b.onEvent), chromedp.WithLogf(t.Logf))
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})

	// Start the browser: the first Run's context must not carry a timeout
	// (it would end the browser), so a timer cancels a start that hangs.
	hung := time.AfterFunc(browserStartTimeout, cancelAlloc)
	err = chromedp.Do(tabCtx)
	if !hung.Stop() {
		t.Fatalf("starting %s took more than %v", exe, browserStartTimeout)
	}
	if err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	ctx, cancel := context.WithDeadline(tabCtx, deadline)
	t.Cleanup(cancel)
	b.ctx = ctx
	b.do("set up the tab", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		for _, probe := range []string{cspProbe, fetchProbe} {
			if _, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: probe}); err != nil {
				return err
			}
		}
		if opts.bypassCSP {
			if _, err := cdp.Call(ctx, tg, page.SetBypassCSP, page.SetBypassCSPParams{Enabled: true}); err != nil {
				return err
			}
		}
		return nil
	}))
	return b
}

// onEvent collects what the tab reports; it runs on the tab's reader
// goroutine and must return fast.
func (b *browserEnv) onEvent(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg := d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			msg += " " + d.Exception.Description
		}
		b.mu.exceptions = append(b.mu.exceptions, fmt.Sprintf("%s (%s:%d)", msg, d.URL, d.LineNumber))
	case *runtime.EventConsoleAPICalled:
		var parts []string
		for _, a := range ev.Args {
			if a.Value != nil {
				var s string
				if json.Unmarshal(a.Value, &s) == nil {
					parts = append(parts, s)
					continue
				}
				parts = append(parts, string(a.Value))
			} else {
				parts = append(parts, a.Description)
			}
		}
		line := strings.Join(parts, " ")
		if strings.HasPrefix(line, "engram-test csp violation: ") {
			b.mu.csp = append(b.mu.csp, line)
		} else if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning {
			b.mu.console = append(b.mu.console, string(ev.Type)+": "+line)
		}
	case *cdplog.EventEntryAdded:
		e := ev.Entry
		if strings.Contains(e.Text, "Content Security Policy") || strings.Contains(e.Text, "Content-Security-Policy") {
			b.mu.csp = append(b.mu.csp, fmt.Sprintf("%s: %s (%s)", e.Source, e.Text, e.URL))
		} else if e.Level == cdplog.EntryLevelError || e.Level == cdplog.EntryLevelWarning {
			b.mu.console = append(b.mu.console, fmt.Sprintf("log %s %s: %s (%s)", e.Source, e.Level, e.Text, e.URL))
		}
	}
}

// reported returns copies of what the tab reported so far.
func (b *browserEnv) reported() (exceptions, csp, console []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.mu.exceptions...), append([]string(nil), b.mu.csp...), append([]string(nil), b.mu.console...)
}

// noErrors fails the test if the page threw an uncaught error or violated
// its Content-Security-Policy.
func (b *browserEnv) noErrors(where string) {
	b.t.Helper()
	exc, csp, _ := b.reported()
	for _, e := range exc {
		b.t.Errorf("%s: uncaught JavaScript error: %s", where, e)
	}
	for _, v := range csp {
		b.t.Errorf("%s: Content-Security-Policy violation: %s", where, v)
	}
}

// do runs the actions, failing the test on error.
func (b *browserEnv) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.fatalf("%s: %v", what, err)
	}
}

// fatalf fails the test with the page's state appended.
func (b *browserEnv) fatalf(format string, args ...any) {
	b.t.Helper()
	b.t.Fatalf(format+"\n%s", append(args, b.state())...)
}

// state describes the page for a failure message: URL, status line and
// the start of its text.
func (b *browserEnv) state() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		const st = document.getElementById("status");
		const text = document.body ? document.body.innerText : "";
		return "page " + location.href + "\nstatus: " + (st ? st.textContent : "(no #status)") +
			"\ntext: " + text.slice(0, 1500);
	})()`))
	if err != nil {
		s = "(page state unavailable: " + err.Error() + ")"
	}
	exc, csp, console := b.reported()
	return fmt.Sprintf("%s\nexceptions: %q\ncsp: %q\nconsole: %q", s, exc, csp, console)
}

// js evaluates an expression in the page and returns its value.
func browserJS[T any](b *browserEnv, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		b.fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitFor polls the expression until it is truthy, failing the test after
// browserWait.
func (b *browserEnv) waitFor(what, expr string) {
	b.t.Helper()
	end := time.Now().Add(browserWait)
	var last error
	for {
		ok, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool]("!!("+expr+")"))
		if err == nil && ok {
			return
		}
		last = err
		if time.Now().After(end) || b.ctx.Err() != nil {
			b.fatalf("waiting %v for %s (%s): last error %v", browserWait, what, expr, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// goHash routes the app to the hash without reloading the page.
func (b *browserEnv) goHash(hash string) {
	b.t.Helper()
	b.do("go to "+hash, chromedp.Evaluate[chromedp.Void](fmt.Sprintf("location.hash = %q", hash)))
}

// navigate loads the URL path (a full page load).
func (b *browserEnv) navigate(path string) {
	b.t.Helper()
	b.do("navigate to "+path, chromedp.Navigate(b.url+path))
}

// click clicks the first element matching the CSS selector with the mouse,
// at its centre after scrolling it into view, the way a person would: it
// fails when something else covers that point.
//
// It waits first for the page's requests to land (fetchProbe): a person
// clicks what the page shows once it has settled.
func (b *browserEnv) click(sel string) {
	b.t.Helper()
	b.waitFor("the page's requests to land before clicking "+sel, "!window.__engramPending")
	b.waitFor("an element "+sel+" to click", fmt.Sprintf("document.querySelector(%q)", sel))
	type point struct {
		X, Y    float64
		Covered string
	}
	p := browserJS[point](b, fmt.Sprintf(`(() => {
		const e = document.querySelector(%q);
		e.scrollIntoView({block: "center", inline: "center"});
		const r = e.getBoundingClientRect();
		const x = r.left + r.width / 2, y = r.top + r.height / 2;
		const top = document.elementFromPoint(x, y);
		const covered = (top && (top === e || e.contains(top))) ? "" :
			(top ? top.outerHTML.slice(0, 200) : "nothing at that point");
		return {X: x, Y: y, Covered: covered};
	})()`, sel))
	if p.Covered != "" {
		b.fatalf("click %s: the point (%.0f, %.0f) shows %s", sel, p.X, p.Y, p.Covered)
	}
	b.do("click "+sel, chromedp.MouseClickXY(p.X, p.Y))
}

// typeInto replaces the value of the input or textarea with text, typed
// key by key.
func (b *browserEnv) typeInto(sel, text string) {
	b.t.Helper()
	b.waitFor("a field "+sel, fmt.Sprintf("document.querySelector(%q)", sel))
	b.do("type into "+sel,
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const e = document.querySelector(%q); e.focus(); e.value = ""; })()`, sel)),
		chromedp.SendKeys(chromedp.CSS(sel), text),
	)
}

// submit submits the form as its submit button would (requestSubmit runs
// the form's submit handlers and its validation).
func (b *browserEnv) submit(formSel string) {
	b.t.Helper()
	b.waitFor("a form "+formSel, fmt.Sprintf("document.querySelector(%q)", formSel))
	b.do("submit "+formSel, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%q).requestSubmit()`, formSel)))
}

// key presses one key (a kb constant or a printable character) on
// whatever has the focus.
func (b *browserEnv) key(k string) {
	b.t.Helper()
	b.do("press key", chromedp.KeyEvent(k))
}

// confirm answers the confirmation dialog with yes.
func (b *browserEnv) confirm() {
	b.t.Helper()
	b.waitFor("the confirmation dialog", `document.getElementById("confirm") && document.getElementById("confirm").open`)
	b.click("#confirm-yes")
	b.waitFor("the confirmation dialog to close", `!document.getElementById("confirm").open`)
}

// login signs in through the form with the token and waits for the users
// page.
func (b *browserEnv) login(token string) {
	b.t.Helper()
	b.navigate("/ui/login")
	b.typeInto("#token", token)
	b.click("#login-submit")
	// Stop at once on a refusal (the login page again, or an error body
	// in place of a page) rather than waiting out the timeout.
	b.waitFor("the users page after signing in", `(location.pathname === "/ui/" && document.querySelector("#users")) ||
		location.search.includes("failed=1") || (document.body && document.body.innerText.trim().startsWith('{"error"'))`)
	if !browserJS[bool](b, `location.pathname === "/ui/" && !!document.querySelector("#users")`) {
		b.fatalf("signing in with the form was refused")
	}
}

// text is the text content of the whole document (hidden parts included,
// SVG titles too).
func (b *browserEnv) text() string {
	b.t.Helper()
	return browserJS[string](b, `document.documentElement.textContent`)
}

// rows returns the given attribute of every element matching sel.
func (b *browserEnv) attrs(sel, attr string) []string {
	b.t.Helper()
	return browserJS[[]string](b, fmt.Sprintf(`Array.from(document.querySelectorAll(%q), e => e.getAttribute(%q))`, sel, attr))
}

// screenshot captures the viewport as PNG into docs/inspector/<name>.png
// when ENGRAM_UPDATE_SCREENSHOTS=1, and into the test's temporary
// directory otherwise (so the capture itself is still tested).
func (b *browserEnv) screenshot(name string) {
	b.t.Helper()
	// Let layout settle and the caret blink phase not matter: blur the
	// focus so no focus ring is drawn, then wait two animation frames.
	b.do("settle before screenshot "+name, chromedp.Evaluate[chromedp.Void](
		`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))`, chromedp.EvalAwaitPromise))
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.fatalf("screenshot %s: %v", name, err)
	}
	dir := b.t.TempDir()
	if os.Getenv("ENGRAM_UPDATE_SCREENSHOTS") == "1" {
		dir = filepath.Join("..", "..", "..", "..", "docs", "inspector")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.t.Fatal(err)
		}
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		b.t.Fatalf("screenshot %s is not a PNG", name)
	}
	p := filepath.Join(dir, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s: %d bytes", p, len(png))
}

// tabUntil presses Tab until the expression is true for
// document.activeElement (bound to el), at most max times; it reports
// whether it got there.
func (b *browserEnv) tabUntil(cond string, max int) bool {
	b.t.Helper()
	check := fmt.Sprintf(`(() => { const el = document.activeElement; return !!(el && (%s)); })()`, cond)
	for range max {
		b.key(kb.Tab)
		if browserJS[bool](b, check) {
			return true
		}
	}
	return false
}

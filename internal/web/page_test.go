package web_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/internal/fake"
)

// Browser tests of what the page shows when it opens and how it looks:
// states stream in without a click, config changes made elsewhere appear,
// cards keep their own height, errors sit beside what caused them, fields
// say what they take, and the page works at 375 and 1,440 px, light and
// dark.

// waitJS waits until the expression js is true, for at most within.
func (b *browser) waitJS(what, js string, within time.Duration) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, within)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
		// What the page shows, for a failure that happens once in a
		// while: the notice and the server cards as drawn.
		state, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`(() => {
			const n = document.querySelector("#notice");
			const s = document.querySelector("#servers");
			return "notice: " + (n && !n.hidden ? n.textContent : "(none)") + "\ncards: " + (s ? s.outerHTML.slice(0, 4000) : "(none)");
		})()`))
		b.t.Fatalf("%s: not within %s (%v)\n%s", what, within, err, state)
	}
}

// scheme switches the page's prefers-color-scheme.
func (b *browser) scheme(dark bool) {
	b.t.Helper()
	value := "light"
	if dark {
		value = "dark"
	}
	b.run("switching to "+value, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: value}},
		})
		return err
	}))
}

// gate holds every request to a server until it is opened: the server is
// "connecting" for as long as the test wants.
type gate struct {
	once sync.Once
	open chan struct{}
	URL  string
}

func startGate(t *testing.T, backend string) *gate {
	g := &gate{open: make(chan struct{})}
	p := fake.StartFaultProxy(t, backend, &fake.FaultOptions{Plan: func(*fake.FaultRequest) fake.Fault {
		<-g.open
		return fake.FaultNone
	}})
	t.Cleanup(g.release) // before the proxy closes, which waits for its requests
	g.URL = p.URL
	return g
}

func (g *gate) release() { g.once.Do(func() { close(g.open) }) }

// TestBrowserStatesStreamInOnOpen: the page opens with nobody clicking;
// a slow server shows as connecting, with its catalog unknown rather than
// "0 tools", then turns ready with its tools as soon as it answers; one
// that is down shows its error and what to do; one that needs a sign-in
// says so.
func TestBrowserStatesStreamInOnOpen(t *testing.T) {
	slow := startGate(t, fake.Start(t, nil).URL)
	as := fake.StartAuth(t, nil)
	secure := fake.Start(t, &fake.Options{Auth: as})
	e := newEnv(t,
		mcpgate.ServerConfig{ID: "slow", URL: slow.URL, Auth: mcpgate.AuthNone, Enabled: true},
		mcpgate.ServerConfig{ID: "down", URL: refusedURL, Auth: mcpgate.AuthNone, Enabled: true},
		mcpgate.ServerConfig{ID: "secure", URL: secure.URL, Auth: mcpgate.AuthOAuth, Enabled: true},
	)
	b := newBrowser(t)
	b.run("opening the page", chromedp.Navigate(e.page.URL()), chromedp.WaitVisible(chromedp.CSS("#server-slow")))
	b.waitText(`#server-slow[data-state="connecting"] .state`, "Connecting")
	b.waitText(`#server-slow .counts`, "Listing")
	b.waitText(`#server-down[data-state="error"] .problem-next`, "reconnect")
	b.waitText(`#server-secure[data-state="needs-auth"] .problem-next`, "Sign in")
	if text := get(b, "reading the cards", chromedp.Evaluate[string](`document.querySelector("#servers").innerText`)); strings.Contains(text, "0 tools") {
		t.Errorf("a server whose catalog is unknown reads as 0 tools:\n%s", text)
	}
	b.shot("connecting")

	slow.release()
	b.waitText(`#server-slow[data-state="ready"] .state`, "Ready")
	b.waitText(`#server-slow .counts`, "8 tools")
	b.shot("ready")
}

// TestBrowserCachedCatalogIsMarked: a catalog an earlier process stored
// shows its counts marked cached and how old, on a card whose state is
// the server's real one (here: down), never ready.
func TestBrowserCachedCatalogIsMarked(t *testing.T) {
	e := newEnvWith(t, &envOptions{Catalogs: true, Stored: storedCatalog(t, "down", refusedURL)},
		mcpgate.ServerConfig{ID: "down", URL: refusedURL, Auth: mcpgate.AuthNone, Enabled: true})
	b := newBrowser(t)
	b.run("opening the page", chromedp.Navigate(e.page.URL()), chromedp.WaitVisible(chromedp.CSS(`#server-down[data-state="error"][data-cached="true"]`)))
	b.waitText(`#server-down .counts`, "3 tools")
	b.waitText(`#server-down .counts`, "(cached, listed 1 h ago)")
	b.waitText(`#server-down .state`, "Error")
	b.shot("cached")
}

// TestBrowserShowsConfigChangedElsewhere: a server another process adds
// to the config file is a card within a second, then connects; one it
// removes goes.
func TestBrowserShowsConfigChangedElsewhere(t *testing.T) {
	docs := fake.Start(t, nil)
	extra := fake.Start(t, nil)
	e := newEnv(t, mcpgate.ServerConfig{ID: "docs", URL: docs.URL, Auth: mcpgate.AuthNone, Enabled: true})
	b := newBrowser(t)
	b.run("opening the page", chromedp.Navigate(e.page.URL()), chromedp.WaitVisible(chromedp.CSS(`#server-docs[data-state="ready"]`)))
	edit := func(f func(*config.File) error) {
		t.Helper()
		cfg, err := config.Load(e.cfgPath)
		if err == nil {
			err = f(cfg)
		}
		if err == nil {
			err = cfg.Save()
		}
		if err != nil {
			t.Fatal(err)
		}
	}

	edit(func(f *config.File) error {
		return f.Add(mcpgate.ServerConfig{ID: "extra", URL: extra.URL, Auth: mcpgate.AuthNone, Enabled: true}, false)
	})
	b.waitJS("the added server's card", `!!document.querySelector("#server-extra")`, time.Second)
	b.waitText(`#server-extra[data-state="ready"] .counts`, "8 tools")
	b.shot("added-elsewhere")

	edit(func(f *config.File) error { return f.Remove("docs") })
	b.waitJS("the removed server's card gone", `!document.querySelector("#server-docs")`, time.Second)
}

// cardBox is where a card is on the page.
type cardBox struct{ Top, Height float64 }

func (b *browser) box(sel string) cardBox {
	b.t.Helper()
	return get(b, "measuring "+sel, chromedp.Evaluate[cardBox](fmt.Sprintf(
		`(() => { const r = document.querySelector(%q).getBoundingClientRect(); return {Top: r.top + scrollY, Height: r.height}; })()`, sel)))
}

// TestBrowserCardsKeepTheirHeight: at 1,440 px two cards share a row;
// the one with an error is taller than the ready one, and opening the
// ready one's catalog does not stretch its neighbour.
func TestBrowserCardsKeepTheirHeight(t *testing.T) {
	srv := fake.Start(t, nil)
	e := newEnv(t,
		mcpgate.ServerConfig{ID: "a-docs", URL: srv.URL, Auth: mcpgate.AuthNone, Enabled: true},
		mcpgate.ServerConfig{ID: "b-down", URL: refusedURL, Auth: mcpgate.AuthNone, Enabled: true},
	)
	b := newBrowser(t)
	b.run("opening the page at 1,440 px", chromedp.EmulateViewport(1440, 900), chromedp.Navigate(e.page.URL()),
		chromedp.WaitVisible(chromedp.CSS(`#server-a-docs[data-state="ready"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#server-b-down[data-state="error"] .problem`)))
	ready, broken := b.box("#server-a-docs"), b.box("#server-b-down")
	if ready.Top != broken.Top {
		t.Fatalf("at 1,440 px the cards are not in one row: tops %v and %v", ready.Top, broken.Top)
	}
	if broken.Height <= ready.Height {
		t.Errorf("the card with an error (%v px) is not taller than the ready one (%v px): heights are shared", broken.Height, ready.Height)
	}
	b.run("opening the catalog",
		press(`#server-a-docs button[data-action="catalog"]`),
		chromedp.WaitVisible(chromedp.CSS(`#server-a-docs li.tool[data-tool="echo"]`)))
	open, after := b.box("#server-a-docs"), b.box("#server-b-down")
	if open.Height <= broken.Height {
		t.Fatalf("the open catalog (%v px) should be the taller card; the test proves nothing", open.Height)
	}
	if math.Abs(after.Height-broken.Height) > 1 {
		t.Errorf("opening a catalog stretched its neighbour from %v to %v px", broken.Height, after.Height)
	}
	b.shot("own-heights")
}

// TestBrowserErrorsBesideTheirForm: a refused add is explained inside the
// add form at the field it is about; a bad import inside the import form;
// a failed tool switch beside that tool; a failed card action inside that
// card. The top notice is not where they go.
func TestBrowserErrorsBesideTheirForm(t *testing.T) {
	srv := fake.Start(t, nil)
	e := newEnv(t, mcpgate.ServerConfig{ID: "docs", URL: srv.URL, Auth: mcpgate.AuthNone, Enabled: true})
	b := newBrowser(t)
	b.run("opening the page", chromedp.Navigate(e.page.URL()), chromedp.WaitVisible(chromedp.CSS(`#server-docs[data-state="ready"]`)))
	noticeEmpty := func(when string) {
		t.Helper()
		if n := get(b, "reading the notice", chromedp.Evaluate[string](`(() => { const n = document.querySelector("#notice"); return n.hidden ? "" : n.textContent; })()`)); n != "" {
			t.Errorf("%s: the error went to the top notice: %q", when, n)
		}
	}

	// The browser's own check, said in the form.
	b.run("adding a bad name",
		chromedp.SendKeys(chromedp.CSS("#add-id"), "Bad Name"),
		chromedp.SendKeys(chromedp.CSS("#add-url"), srv.URL),
		chromedp.Click(chromedp.CSS("#add-submit")))
	b.waitText(`#add-form .form-error`, "lower-case letters")
	b.waitJS("the name marked invalid", `document.querySelector("#add-id").getAttribute("aria-invalid") === "true"`, 5*time.Second)

	// The server's refusal, at the field it names.
	b.run("adding a plain-http address that is not loopback",
		chromedp.SetValue(chromedp.CSS("#add-id"), "web"),
		chromedp.SetValue(chromedp.CSS("#add-url"), "http://mcp.example.com/mcp"),
		chromedp.Click(chromedp.CSS("#add-submit")))
	b.waitText(`#add-form .form-error`, "http")
	b.waitJS("the URL marked invalid", `document.querySelector("#add-url").getAttribute("aria-invalid") === "true" && !document.querySelector("#add-id").hasAttribute("aria-invalid")`, 5*time.Second)
	b.run("adding a name already taken",
		chromedp.SetValue(chromedp.CSS("#add-id"), "docs"),
		chromedp.SetValue(chromedp.CSS("#add-url"), srv.URL),
		chromedp.Click(chromedp.CSS("#add-submit")))
	b.waitText(`#add-form .form-error`, "already configured")
	b.run("adding a header without a colon",
		chromedp.SetValue(chromedp.CSS("#add-id"), "team"),
		chromedp.SetValue(chromedp.CSS("#add-headers"), "X-Team TEAM"),
		chromedp.Click(chromedp.CSS("#add-submit")))
	b.waitText(`#add-form .form-error`, "want Name: value")
	b.waitJS("the headers marked invalid", `document.querySelector("#add-headers").getAttribute("aria-invalid") === "true"`, 5*time.Second)
	if v := get(b, "reading the form", chromedp.Value(chromedp.CSS("#add-id"))); v != "team" {
		t.Errorf("a refused add lost what was typed: name is %q", v)
	}
	noticeEmpty("add")
	b.shot("add-error")

	b.run("previewing a file that is not JSON",
		chromedp.SetValue(chromedp.CSS("#import-text"), "{not json"),
		chromedp.Click(chromedp.CSS("#import-preview")))
	b.waitJS("the import error in the import form", `(() => { const e = document.querySelector("#import-form .form-error"); return !!e && !e.hidden && e.textContent.length > 0; })()`, 5*time.Second)
	noticeEmpty("import")

	// A config file that no longer loads makes every change fail: the
	// switch's error is beside the switch, the card's inside the card.
	b.run("opening the catalog",
		press(`#server-docs button[data-action="catalog"]`),
		chromedp.WaitVisible(chromedp.CSS(`#server-docs li.tool[data-tool="echo"] input.tool-switch`)))
	if err := os.WriteFile(e.cfgPath, []byte("{broken"), 0o600); err != nil {
		t.Fatal(err)
	}
	b.run("switching echo off", press(`#server-docs li.tool[data-tool="echo"] input.tool-switch`))
	b.waitJS("the switch's error beside it", `(() => { const e = document.querySelector('#server-docs li.tool[data-tool="echo"] .tool-error'); return !!e && e.textContent.length > 0; })()`, 10*time.Second)
	if on := get(b, "reading the switch", chromedp.Evaluate[bool](`document.querySelector('#server-docs li.tool[data-tool="echo"] input.tool-switch').checked`)); !on {
		t.Error("the switch shows off although switching it failed")
	}
	b.run("removing",
		press(`#server-docs button[data-action="remove"]`),
		press(`#server-docs button[data-action="remove-confirm"]`))
	b.waitJS("the card's error inside it", `(() => { const e = document.querySelector("#server-docs .card-error"); return !!e && e.textContent.length > 0; })()`, 10*time.Second)
	noticeEmpty("tool switch and remove")
	b.shot("card-errors")
}

// TestBrowserQuestionFieldsSayWhatTheyTake: a question card's fields get
// the input type, pattern, keyboard and a hint from their JSON Schema
// format and bounds.
func TestBrowserQuestionFieldsSayWhatTheyTake(t *testing.T) {
	e := newEnv(t)
	e.putQuestion("kinds", `{"type":"object","properties":{
		"email":{"type":"string","format":"email"},
		"site":{"type":"string","format":"uri"},
		"day":{"type":"string","format":"date"},
		"when":{"type":"string","format":"date-time"},
		"seats":{"type":"integer","minimum":1,"maximum":9},
		"ratio":{"type":"number","minimum":0}
	}}`)
	b := newBrowser(t)
	card := `form.pending[data-server="demo"]`
	b.run("opening the page", chromedp.Navigate(e.page.URL()), chromedp.WaitVisible(chromedp.CSS(card+` input[name="seats"]`)))
	type input struct{ Type, Mode, Pattern, Hint, Min, Max string }
	read := func(name string) input {
		return get(b, "reading "+name, chromedp.Evaluate[input](fmt.Sprintf(`(() => {
			const i = document.querySelector(%q + ' input[name="%s"]');
			const h = i.parentElement.querySelector(".hint");
			return {Type: i.type, Mode: i.inputMode, Pattern: i.pattern, Hint: h ? h.textContent : "", Min: i.min, Max: i.max};
		})()`, card, name)))
	}
	for name, want := range map[string]struct{ typ, mode, hint string }{
		"email": {"email", "email", "email address"},
		"site":  {"url", "url", "https://"},
		"day":   {"date", "", "2026-12-31"},
		"when":  {"text", "", "offset from UTC"},
		"seats": {"number", "numeric", "A whole number from 1 to 9"},
		"ratio": {"number", "decimal", "0 or more"},
	} {
		got := read(name)
		if got.Type != want.typ || got.Mode != want.mode || !strings.Contains(got.Hint, want.hint) {
			t.Errorf("%s: type %q inputmode %q hint %q; want %q, %q and a hint with %q", name, got.Type, got.Mode, got.Hint, want.typ, want.mode, want.hint)
		}
	}
	if got := read("when"); got.Pattern == "" {
		t.Error("the date-time field has no pattern")
	}
	if got := read("seats"); got.Min != "1" || got.Max != "9" {
		t.Errorf("seats: min %q max %q, want 1 and 9", got.Min, got.Max)
	}
	// The add form says what its fields take too.
	for sel, want := range map[string]string{"#add-url": "https://", "#add-headers": "Name: value", "#add-id": "Lower-case"} {
		hint := get(b, "reading "+sel, chromedp.Evaluate[string](fmt.Sprintf(`document.getElementById(document.querySelector(%q).getAttribute("aria-describedby")).textContent`, sel)))
		if !strings.Contains(hint, want) {
			t.Errorf("%s: hint %q, want it to say %q", sel, hint, want)
		}
	}
	b.shot("hints")
}

// layout is what the layout test measures.
type layout struct {
	ScrollWidth, InnerWidth, MainWidth float64
	// Small lists the visible controls smaller than 40 × 40 px.
	Small []string
	// Tops are the cards' tops, in order.
	Tops []float64
	// Background, Foreground and Muted are computed colours.
	Background, Foreground, Muted, Card string
}

const measure = `(() => {
	const small = [];
	for (const c of document.querySelectorAll("button, a.button, input, select, textarea, label.tool-head, label.inline")) {
		const r = c.getBoundingClientRect();
		if (r.width === 0 || r.height === 0) continue; // not shown
		if (c.matches("input[type=checkbox]")) continue; // its label is the target
		if (r.height < 40 || r.width < 40) small.push((c.id || c.getAttribute("data-action") || c.tagName) + " " + Math.round(r.width) + "x" + Math.round(r.height));
	}
	const muted = document.querySelector(".muted, .hint");
	return {
		ScrollWidth: document.documentElement.scrollWidth, InnerWidth: innerWidth,
		MainWidth: document.querySelector("main").getBoundingClientRect().width,
		Small: small,
		Tops: Array.from(document.querySelectorAll("#servers > li")).map((c) => c.getBoundingClientRect().top),
		Background: getComputedStyle(document.body).backgroundColor,
		Foreground: getComputedStyle(document.body).color,
		Muted: getComputedStyle(muted).color,
		Card: getComputedStyle(document.querySelector(".card")).backgroundColor,
	};
})()`

// TestBrowserLayoutAtBothWidthsLightAndDark: at 375 px nothing scrolls
// sideways, every control is at least 40 px to tap, and the request log
// drawer fits and closes; at 1,440 px the page keeps a sensible width and
// lays cards out side by side; both schemes have readable contrast, and
// the dark one is dark. Screenshots of the four.
func TestBrowserLayoutAtBothWidthsLightAndDark(t *testing.T) {
	srv := fake.Start(t, nil)
	as := fake.StartAuth(t, nil)
	secure := fake.Start(t, &fake.Options{Auth: as})
	e := newEnv(t,
		mcpgate.ServerConfig{ID: "docs", Name: "Team docs", URL: srv.URL, Auth: mcpgate.AuthNone, Enabled: true},
		mcpgate.ServerConfig{ID: "down", URL: refusedURL, Auth: mcpgate.AuthNone, Enabled: true},
		mcpgate.ServerConfig{ID: "secure", URL: secure.URL, Auth: mcpgate.AuthOAuth, Enabled: true},
	)
	e.putQuestion("q", `{"type":"object","properties":{"email":{"type":"string","format":"email","title":"Your email"},"seats":{"type":"integer","minimum":1,"maximum":9}},"required":["email"]}`)
	b := newBrowser(t)
	b.run("opening the page", chromedp.EmulateViewport(375, 800), chromedp.Navigate(e.page.URL()),
		chromedp.WaitVisible(chromedp.CSS(`#server-docs[data-state="ready"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#server-down[data-state="error"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#server-secure[data-state="needs-auth"]`)),
		chromedp.WaitVisible(chromedp.CSS(`form.pending input[name="email"]`)))

	var light, dark layout
	for _, width := range []int64{375, 1440} {
		for _, isDark := range []bool{false, true} {
			name := strconv.FormatInt(width, 10) + map[bool]string{false: "-light", true: "-dark"}[isDark]
			b.scheme(isDark)
			b.run("sizing to "+name, chromedp.EmulateViewport(width, 900))
			b.waitJS("the layout at "+name, fmt.Sprintf(`innerWidth === %d`, width), 5*time.Second)
			l := get(b, "measuring at "+name, chromedp.Evaluate[layout](measure))
			if l.ScrollWidth > l.InnerWidth {
				t.Errorf("%s: the page is %v px wide in a %v px window: it scrolls sideways", name, l.ScrollWidth, l.InnerWidth)
			}
			if width == 375 && len(l.Small) > 0 {
				t.Errorf("%s: controls smaller than 40 px to tap: %v", name, l.Small)
			}
			if width == 1440 {
				if l.MainWidth > 1280 {
					t.Errorf("%s: the content is %v px wide; lines that long are hard to read", name, l.MainWidth)
				}
				if len(l.Tops) != 3 || l.Tops[0] != l.Tops[1] || l.Tops[1] != l.Tops[2] {
					t.Errorf("%s: the three cards are not side by side: tops %v", name, l.Tops)
				}
			}
			for what, pair := range map[string][2]string{"text": {l.Foreground, l.Background}, "muted text": {l.Muted, l.Card}} {
				if r := contrast(t, pair[0], pair[1]); r < 4.5 {
					t.Errorf("%s: %s contrast %.1f:1 (%s on %s), want at least 4.5:1", name, what, r, pair[0], pair[1])
				}
			}
			if isDark {
				dark = l
			} else {
				light = l
			}
			b.shot(name)
		}
		if dark.Background == light.Background {
			t.Errorf("at %d px the background stays %s in the dark scheme", width, dark.Background)
		}
	}
	if luminance(t, dark.Background) > luminance(t, light.Background) {
		t.Errorf("the dark scheme's background %s is lighter than the light one's %s", dark.Background, light.Background)
	}

	// The request log drawer at 375 px: inside the window, closable.
	b.scheme(false)
	b.run("narrowing", chromedp.EmulateViewport(375, 800))
	b.run("opening the log", chromedp.Click(chromedp.CSS("#log-toggle")), chromedp.WaitVisible(chromedp.CSS("#log-close")))
	drawer := get(b, "measuring the drawer", chromedp.Evaluate[[]float64](`(() => {
		const d = document.querySelector("#log").getBoundingClientRect(), c = document.querySelector("#log-close").getBoundingClientRect();
		return [d.left, d.right, c.right, c.height, document.documentElement.scrollWidth];
	})()`))
	if drawer[0] < 0 || drawer[1] > 375 || drawer[2] > 375 || drawer[3] < 40 || drawer[4] > 375 {
		t.Errorf("at 375 px the drawer (left, right, close button's right and height, page width) is %v", drawer)
	}
	b.shot("375-log")
	b.run("closing the log", chromedp.Click(chromedp.CSS("#log-close")), chromedp.WaitNotVisible(chromedp.CSS("#log")))
}

// rgb reads a computed colour "rgb(r, g, b)" or "rgba(r, g, b, a)".
func rgb(t *testing.T, c string) [3]float64 {
	t.Helper()
	inner := c[strings.IndexByte(c, '(')+1 : strings.IndexByte(c, ')')]
	parts := strings.Split(inner, ",")
	var out [3]float64
	for i := range out {
		v, err := strconv.ParseFloat(strings.TrimSpace(parts[i]), 64)
		if err != nil {
			t.Fatalf("colour %q: %v", c, err)
		}
		out[i] = v
	}
	return out
}

// luminance is WCAG 2's relative luminance.
func luminance(t *testing.T, c string) float64 {
	t.Helper()
	var l [3]float64
	for i, v := range rgb(t, c) {
		v /= 255
		if v <= 0.04045 {
			l[i] = v / 12.92
		} else {
			l[i] = math.Pow((v+0.055)/1.055, 2.4)
		}
	}
	return 0.2126*l[0] + 0.7152*l[1] + 0.0722*l[2]
}

// contrast is WCAG 2's contrast ratio of two colours.
func contrast(t *testing.T, a, b string) float64 {
	t.Helper()
	la, lb := luminance(t, a), luminance(t, b)
	return (math.Max(la, lb) + 0.05) / (math.Min(la, lb) + 0.05)
}

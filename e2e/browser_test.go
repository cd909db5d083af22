package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/playwright-community/playwright-go"

	chromium "github.com/lockwarden/lockwarden/e2e/browser"
)

// One Chromium per test binary (TestMain); every test gets a fresh context
// (cookies, storage) and page.

var (
	browser     playwright.Browser
	stopBrowser = func() {}
)

func startBrowser() error {
	b, stop, err := chromium.Launch()
	if err != nil {
		return fmt.Errorf("e2e: %w", err)
	}
	browser, stopBrowser = b, stop
	return nil
}

// browserLog is everything a page said on its console. Errors fail the test
// unless a journey declared them expected: a console that logs errors during
// a journey is broken even when the screen looks right.
type browserLog struct {
	mu         sync.Mutex
	lines      []string
	unexpected []string
	allowed    []allowRule
}

// allowRule names one console error a journey provokes on purpose, such as
// the browser's own report of a 4xx page the journey asked for.
type allowRule struct {
	why   string
	match func(kind, text, url string) bool
}

func (l *browserLog) add(kind, text, url string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	line := kind + ": " + text
	if url != "" {
		line += " (" + url + ")"
	}
	l.lines = append(l.lines, line)
	if kind != "error" && kind != "pageerror" && kind != "dialog" {
		return
	}
	for _, a := range l.allowed {
		if a.match(kind, text, url) {
			return
		}
	}
	l.unexpected = append(l.unexpected, line)
}

// allow declares an expected console error; why is shown nowhere but keeps
// every exception explained where it is made.
func (l *browserLog) allow(why string, match func(kind, text, url string) bool) {
	l.mu.Lock()
	l.allowed = append(l.allowed, allowRule{why: why, match: match})
	l.mu.Unlock()
}

func (l *browserLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// tab is one fresh browser context and page with its console log.
type tab struct {
	playwright.Page
	log *browserLog
}

// newPage opens a fresh context and page for t.
func newPage(t *testing.T) playwright.Page { return openTab(t).Page }

// openTab opens a fresh context and page for t. When t ends, any console
// error, uncaught exception or dialog (an injected alert) the journey did
// not declare fails it; on failure a screenshot and the browser console log
// are kept under e2e/artifacts/.
func openTab(t *testing.T) *tab {
	t.Helper()
	ctx, err := browser.NewContext(playwright.BrowserNewContextOptions{
		Viewport: &playwright.Size{Width: 1280, Height: 900},
	})
	if err != nil {
		t.Fatalf("new browser context: %v", err)
	}
	page, err := ctx.NewPage()
	if err != nil {
		t.Fatalf("new page: %v", err)
	}
	page.SetDefaultTimeout(10000)
	log := &browserLog{}
	page.On("console", func(m playwright.ConsoleMessage) {
		url := ""
		if loc := m.Location(); loc != nil {
			url = loc.URL
		}
		log.add(m.Type(), m.Text(), url)
	})
	page.On("pageerror", func(err error) {
		log.add("pageerror", err.Error(), "")
	})
	page.OnDialog(func(d playwright.Dialog) {
		log.add("dialog", d.Type()+": "+d.Message(), page.URL())
		d.Dismiss()
	})
	t.Cleanup(func() {
		log.mu.Lock()
		bad := append([]string(nil), log.unexpected...)
		log.mu.Unlock()
		if len(bad) > 0 {
			t.Errorf("the browser reported %d unexpected error(s):\n%s", len(bad), strings.Join(bad, "\n"))
		}
		if t.Failed() {
			dir := filepath.Join("artifacts")
			os.MkdirAll(dir, 0o755)
			base := filepath.Join(dir, regexp.MustCompile(`[^A-Za-z0-9_.-]+`).ReplaceAllString(t.Name(), "_"))
			if _, err := page.Screenshot(playwright.PageScreenshotOptions{Path: playwright.String(base + ".png"), FullPage: playwright.Bool(true)}); err == nil {
				t.Logf("screenshot: e2e/%s.png", base)
			}
			os.WriteFile(base+".console.log", []byte(log.String()), 0o644)
			t.Logf("browser console:\n%s", log.String())
		}
		ctx.Close()
	})
	return &tab{Page: page, log: log}
}

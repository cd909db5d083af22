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
)

// One Chromium per test binary; every test gets a fresh context (cookies,
// storage) and page. `make test` installs the driver and sets the paths; the
// fallbacks below let `go test ./e2e` work after one `make deps`.

var (
	pw      *playwright.Playwright
	browser playwright.Browser
)

func startBrowser() error {
	if os.Getenv("PLAYWRIGHT_DRIVER_PATH") == "" {
		home, _ := os.UserHomeDir()
		matches, _ := filepath.Glob(filepath.Join(home, ".cache/lockwarden/playwright-driver-*"))
		if len(matches) == 0 {
			return fmt.Errorf("e2e: no playwright driver: run `make deps` (it installs playwright-core from npm matching go.mod)")
		}
		os.Setenv("PLAYWRIGHT_DRIVER_PATH", matches[len(matches)-1])
	}
	if os.Getenv("PLAYWRIGHT_NODEJS_PATH") == "" {
		for _, p := range []string{"/usr/bin/node", "/usr/local/bin/node"} {
			if _, err := os.Stat(p); err == nil {
				os.Setenv("PLAYWRIGHT_NODEJS_PATH", p)
				break
			}
		}
	}
	exe := os.Getenv("LOCKWARDEN_CHROMIUM")
	if exe == "" {
		exe = "/usr/bin/chromium"
	}
	if _, err := os.Stat(exe); err != nil {
		return fmt.Errorf("e2e: no chromium at %s: install the Debian package `chromium` (make deps)", exe)
	}
	var err error
	pw, err = playwright.Run(&playwright.RunOptions{SkipInstallBrowsers: true, Verbose: false})
	if err != nil {
		return fmt.Errorf("e2e: start playwright driver: %w", err)
	}
	browser, err = pw.Chromium.Launch(playwright.BrowserTypeLaunchOptions{
		ExecutablePath: playwright.String(exe),
		Headless:       playwright.Bool(true),
		Args: []string{"--no-sandbox", "--disable-gpu", "--disable-background-networking",
			"--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"},
	})
	if err != nil {
		pw.Stop()
		return fmt.Errorf("e2e: launch chromium: %w", err)
	}
	return nil
}

func stopBrowser() {
	if browser != nil {
		browser.Close()
	}
	if pw != nil {
		pw.Stop()
	}
}

// newPage opens a fresh context and page for t. On failure it keeps a
// screenshot and the browser console log under e2e/artifacts/.
func newPage(t *testing.T) playwright.Page {
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
	var mu sync.Mutex
	var console []string
	page.On("console", func(m playwright.ConsoleMessage) {
		mu.Lock()
		console = append(console, m.Type()+": "+m.Text())
		mu.Unlock()
	})
	page.On("pageerror", func(err error) {
		mu.Lock()
		console = append(console, "pageerror: "+err.Error())
		mu.Unlock()
	})
	t.Cleanup(func() {
		if t.Failed() {
			dir := filepath.Join("artifacts")
			os.MkdirAll(dir, 0o755)
			base := filepath.Join(dir, regexp.MustCompile(`[^A-Za-z0-9_.-]+`).ReplaceAllString(t.Name(), "_"))
			if _, err := page.Screenshot(playwright.PageScreenshotOptions{Path: playwright.String(base + ".png"), FullPage: playwright.Bool(true)}); err == nil {
				t.Logf("screenshot: e2e/%s.png", base)
			}
			mu.Lock()
			log := strings.Join(console, "\n")
			mu.Unlock()
			os.WriteFile(base+".console.log", []byte(log), 0o644)
			t.Logf("browser console:\n%s", log)
		}
		ctx.Close()
	})
	return page
}

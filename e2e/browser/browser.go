// Package browser starts the headless Chromium that the browser tests
// (e2e/ and static/) drive through playwright. `make test` installs the
// driver and sets the paths; the fallbacks let `go test` work after one
// `make deps`.
package browser

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/playwright-community/playwright-go"
)

// Launch starts the playwright driver and a headless Chromium
// (LOCKWARDEN_CHROMIUM, default /usr/bin/chromium). stop closes both.
func Launch() (b playwright.Browser, stop func(), err error) {
	if os.Getenv("PLAYWRIGHT_DRIVER_PATH") == "" {
		home, _ := os.UserHomeDir()
		matches, _ := filepath.Glob(filepath.Join(home, ".cache/lockwarden/playwright-driver-*"))
		if len(matches) == 0 {
			return nil, nil, fmt.Errorf("no playwright driver: run `make deps` (it installs playwright-core from npm matching go.mod)")
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
		return nil, nil, fmt.Errorf("no chromium at %s: install the Debian package `chromium` (make deps)", exe)
	}
	pw, err := playwright.Run(&playwright.RunOptions{SkipInstallBrowsers: true, Verbose: false})
	if err != nil {
		return nil, nil, fmt.Errorf("start playwright driver: %w", err)
	}
	b, err = pw.Chromium.Launch(playwright.BrowserTypeLaunchOptions{
		ExecutablePath: playwright.String(exe),
		Headless:       playwright.Bool(true),
		Args: []string{"--no-sandbox", "--disable-gpu", "--disable-background-networking",
			"--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"},
	})
	if err != nil {
		pw.Stop()
		return nil, nil, fmt.Errorf("launch chromium: %w", err)
	}
	return b, func() { b.Close(); pw.Stop() }, nil
}

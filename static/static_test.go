package static

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestStaticEmbeddedFiles(t *testing.T) {
	for _, name := range append([]string{"app.css"}, Scripts...) {
		b, err := fs.ReadFile(FS, name)
		if err != nil {
			t.Fatalf("%s not embedded: %v", name, err)
		}
		if len(b) < 1000 && name != "favicon.svg" {
			t.Errorf("%s is suspiciously small (%d bytes)", name, len(b))
		}
		// The console runs on networks without internet access.
		if regexp.MustCompile(`(?i)https?://|@import|\burl\(|//[a-z0-9.-]+\.[a-z]{2,}/`).Match(b) {
			t.Errorf("%s refers to an external resource", name)
		}
	}
}

func TestStaticScriptWritesTextOnly(t *testing.T) {
	var all strings.Builder
	for _, name := range Scripts {
		b, err := fs.ReadFile(FS, name)
		if err != nil {
			t.Fatal(err)
		}
		js := string(b)
		all.WriteString(js)
		for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", ".style."} {
			if strings.Contains(js, bad) {
				t.Errorf("%s uses %s", name, bad)
			}
		}
		// Selectors are constant strings; a name concatenated into one
		// could break out of it.
		if regexp.MustCompile(`(querySelector(All)?|all)\([^)]*\+\s*(name|f\.)`).MatchString(js) {
			t.Errorf("%s builds a selector from data", name)
		}
	}
	js := all.String()
	for _, need := range []string{"textContent", "encodeURIComponent", `"/ws"`, "dataset.frames", "dataset.ws"} {
		if !strings.Contains(js, need) {
			t.Errorf("the scripts lack %s", need)
		}
	}
}

// The client is split by page concern; each part stays small enough to
// read, every embedded script is loaded, and the websocket opens last.
func TestStaticScriptsSplitAndOrdered(t *testing.T) {
	embedded, err := fs.Glob(FS, "*.js")
	if err != nil {
		t.Fatal(err)
	}
	if len(embedded) != len(Scripts) {
		t.Errorf("embedded scripts %v, loaded %v", embedded, Scripts)
	}
	for _, name := range Scripts {
		b, err := fs.ReadFile(FS, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if n := strings.Count(string(b), "\n"); n >= 400 {
			t.Errorf("%s has %d lines; keep each part under 400", name, n)
		}
	}
	if Scripts[0] != "core.js" || Scripts[len(Scripts)-1] != "live.js" {
		t.Errorf("load order %v: core must come first and live last", Scripts)
	}
}

func TestStaticFavicon(t *testing.T) {
	b, err := fs.ReadFile(FS, "favicon.svg")
	if err != nil || !strings.HasPrefix(string(b), "<svg") {
		t.Fatalf("favicon.svg: %v %q", err, b)
	}
}

// The installed uPlot is what `make install-uplot` wrote from npm: each
// embedded file has the SHA-256 its SHA256SUMS records, and the page loads
// it before the client's parts.
func TestStaticVendoredMatchesSums(t *testing.T) {
	sums, err := fs.ReadFile(FS, "vendor/uplot/SHA256SUMS")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		want, name, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", line)
		}
		b, err := fs.ReadFile(FS, "vendor/uplot/"+name)
		if err != nil {
			t.Fatalf("%s not embedded (make deps installs it): %v", name, err)
		}
		if got := fmt.Sprintf("%x", sha256.Sum256(b)); got != want {
			t.Errorf("vendor/uplot/%s has SHA-256 %s, SHA256SUMS says %s: run 'make install-uplot'", name, got, want)
		}
		seen[name] = true
	}
	for _, name := range append(slices.Clone(VendorScripts), VendorStyles...) {
		if !seen[strings.TrimPrefix(name, "vendor/uplot/")] {
			t.Errorf("%s is loaded but not in SHA256SUMS", name)
		}
	}
}

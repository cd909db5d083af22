package e2e

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestBrowserRunsScripts proves the harness itself: the browser loads a
// loopback page and runs its script. If this fails, every journey would.
func TestBrowserRunsScripts(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/s.js" {
			w.Header().Set("Content-Type", "text/javascript")
			w.Write([]byte(`document.getElementById("x").textContent = "ran";`))
			return
		}
		w.Write([]byte(`<!doctype html><p id="x">not yet</p><script src="/s.js"></script>`))
	}))
	defer srv.Close()
	page := newPage(t)
	if _, err := page.Goto(srv.URL); err != nil {
		t.Fatal(err)
	}
	got, err := page.Locator("#x").TextContent()
	if err != nil || got != "ran" {
		t.Fatalf("#x = %q, %v; want the script to have run", got, err)
	}
}

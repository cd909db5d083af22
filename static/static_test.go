package static

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"
)

func TestStaticEmbeddedFiles(t *testing.T) {
	for _, name := range []string{"app.css", "app.js"} {
		b, err := fs.ReadFile(FS, name)
		if err != nil {
			t.Fatalf("%s not embedded: %v", name, err)
		}
		if len(b) < 1000 {
			t.Errorf("%s is suspiciously small (%d bytes)", name, len(b))
		}
		// The console runs on networks without internet access.
		if regexp.MustCompile(`(?i)https?://|@import|\burl\(|//[a-z0-9.-]+\.[a-z]{2,}/`).Match(b) {
			t.Errorf("%s refers to an external resource", name)
		}
	}
}

func TestStaticScriptWritesTextOnly(t *testing.T) {
	b, err := fs.ReadFile(FS, "app.js")
	if err != nil {
		t.Fatal(err)
	}
	js := string(b)
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", ".style."} {
		if strings.Contains(js, bad) {
			t.Errorf("app.js uses %s", bad)
		}
	}
	// Selectors are constant strings; a name concatenated into one could
	// break out of it.
	if regexp.MustCompile(`querySelector(All)?\([^)]*\+\s*(name|f\.)`).MatchString(js) {
		t.Errorf("app.js builds a selector from data")
	}
	for _, need := range []string{"textContent", "encodeURIComponent", `"/ws"`, "dataset.frames", "dataset.ws"} {
		if !strings.Contains(js, need) {
			t.Errorf("app.js lacks %s", need)
		}
	}
}

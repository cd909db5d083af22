package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/views"
	"github.com/lockwarden/lockwarden/web/history"
)

// serveFlags are the flags `lockwarden serve` takes, from its help.
func serveFlags(t *testing.T) map[string]bool {
	t.Helper()
	var help bytes.Buffer
	_, _ = parseServeFlags([]string{"--help"}, func(string) string { return "" }, &help)
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z][a-z-]*)`).FindAllStringSubmatch(help.String(), -1) {
		out[m[1]] = true
	}
	if !out["discovery-budget"] || !out["history-top"] {
		t.Fatalf("serve's help lists %v; the test cannot read it", out)
	}
	return out
}

// flagNames are the --flags a text names.
var flagNames = regexp.MustCompile(`--([a-z][a-z-]+)`)

// Every flag a console page, answer or hint names is one `lockwarden
// serve` takes: /status in each of its states (the hint to raise
// --discovery-budget included), its history switched off, and what a
// running console says on /status and of a name it does not know.
func TestHintsNameFlagsThatExist(t *testing.T) {
	flags := serveFlags(t)
	var texts []string
	for _, m := range []views.StatusPage{
		{Scanning: true, PassTarget: time.Minute, Budget: 0.045, BudgetPass: 3 * time.Minute, Keyspace: 1e6, SamplingShare: 0.01},
		{PassTarget: time.Minute, Budget: 0.045},
	} {
		var b bytes.Buffer
		if err := views.Status(m).Render(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		texts = append(texts, b.String())
	}
	texts = append(texts, history.ErrOff.Error())
	tc := startConsole(t, "127.0.0.1:0")
	for _, p := range []string{"/status", "/api/status", "/api/why/" + tc.prefix + "never-seen", "/api/locks/" + tc.prefix + "never-seen"} {
		req, _ := http.NewRequest("GET", tc.url+p, nil)
		req.Header.Set("Authorization", "Bearer "+testViewerToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		texts = append(texts, string(b))
	}
	named := 0
	for _, text := range texts {
		for _, m := range flagNames.FindAllStringSubmatch(text, -1) {
			named++
			if !flags[m[1]] {
				t.Errorf("--%s is named (%q) but lockwarden serve has no such flag", m[1], around(text, m[0]))
			}
		}
	}
	if named == 0 {
		t.Fatal("no hint names a flag: the test reads nothing")
	}
}

// around is s's text around sub, for a message.
func around(s, sub string) string {
	i := strings.Index(s, sub)
	return s[max(0, i-60):min(len(s), i+len(sub)+60)]
}

package static_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/a-h/templ"

	"github.com/lockwarden/lockwarden/views"
	"github.com/lockwarden/lockwarden/views/words"
)

// The live client redraws durations between page loads (lease left, held
// for, renewed ago, waits): its durText must say every one exactly as the
// server's words.Duration rendered it, or a cell changes wording on the
// first frame.
func TestStaticClientDurationsAsTheServerSaysThem(t *testing.T) {
	fs := newFakeServer(t, map[string]templ.Component{"0": views.Locks(views.LocksPage{Layout: views.Layout{Title: "Locks"}})})
	tb := open(t, fs, "/p/0")
	ms := []int64{-1, 0, 1, 999, 1000, 1049, 4250, 9999, 10_000, 59_999, 60_000, 61_500, 3_599_999,
		3_600_000, 7_500_000, 86_399_999, 86_400_000, 277_200_000}
	var want, list []string
	for _, m := range ms {
		want = append(want, words.Duration(m))
		list = append(list, fmt.Sprint(m))
	}
	got := tb.eval(`() => [` + strings.Join(list, ",") + `].map(ms => window.lockwarden.durText(ms)).join("|")`)
	if got != strings.Join(want, "|") {
		t.Errorf("durText:\n got %v\nwant %s", got, strings.Join(want, "|"))
	}
}

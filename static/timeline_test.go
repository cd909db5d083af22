package static_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/a-h/templ"

	"github.com/lockwarden/lockwarden/views"
)

// The lock's timeline paints in red only the time two holders held an
// exclusive hold at once: readers of a read-write lock together share
// it, a writer with a reader does not, and a holder heard working past
// its expiry (worked_to) overlaps whoever took the lock after.
func TestStaticClientTimelineOverlaps(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	at := func(s int) string { return now.Add(time.Duration(s) * time.Second).Format(time.RFC3339Nano) }
	hold := func(holder, mode string, from, to int, ended string) map[string]any {
		h := map[string]any{"holder": holder, "from": at(from), "to": at(to), "ended": ended}
		if mode != "" {
			h["mode"] = mode
		}
		return h
	}
	tl := views.LockTimeline{Name: "q", Span: views.SpanHour, From: now.Add(-time.Hour), To: now, Kept: true,
		Holds: []views.TimelineHold{{Holder: "x", From: now.Add(-time.Minute), To: now}}}
	detail := views.LockDetail(views.LockDetailPage{Layout: views.Layout{Title: "q", Now: now},
		Lock: views.LockRow{Name: "q", Kind: "rwlock", PTTLMS: -1}, Timeline: tl,
		Waits: []views.WaitRow{{WindowS: 1}, {WindowS: 10}, {WindowS: 60}}})
	fs := newFakeServer(t, map[string]templ.Component{"detail": detail})
	// Newest first, as the history answers.
	expired := hold("a:1", "", -600, -599, "expired")
	expired["worked_to"] = at(-597)
	fs.setAPI("/api/locks/q/history", map[string]any{"holds": []any{
		hold("b:1", "", -599, -598, "released"), // taken while a:1 worked on
		expired,
		hold("w:1:write", "write", -895, -893, "released"), // a writer over r:2's read
		hold("r:2", "read", -898, -894, "released"),
		hold("r:1", "read", -900, -896, "released"), // r:1 and r:2 share from -898 to -896
	}, "wait": []any{}, "kept": true})
	tb := open(t, fs, "/p/detail")
	plot := `[data-testid=lock-timeline] [data-testid=chart-plot]`
	tb.until(`sel => Number(document.querySelector(sel).dataset.drawn) >= 1`, plot)
	got := tb.eval(`sel => window.lockwarden.chartOf(document.querySelector(sel)).points.overlaps.map(o => o.from + "-" + o.to)`, plot)
	base := now.Unix()
	want := fmt.Sprint([]any{fmt.Sprintf("%d-%d", base-599, base-598), fmt.Sprintf("%d-%d", base-895, base-894)})
	if fmt.Sprint(got) != want {
		t.Errorf("overlaps drawn %v, want %v (the late holder's work over the next hold, the writer over a reader; never the two readers)", got, want)
	}
}

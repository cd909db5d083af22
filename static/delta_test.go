package static_test

import (
	"fmt"
	"testing"

	"github.com/a-h/templ"

	"github.com/lockwarden/lockwarden/views"
)

// TestStaticClientDeltaFrames: after a full frame, a delta frame changes
// only the numbers it carries and keeps the others; a delta before any
// full frame is ignored.
func TestStaticClientDeltaFrames(t *testing.T) {
	lims := views.Limiters(views.LimitersPage{Layout: views.Layout{Title: "Limiters", Now: t0},
		Limiters: []views.LimiterRow{{Name: "m", Kind: "token-bucket", Rate: 5, IntervalMS: 2, PerSecond: 500},
			{Name: "n", Kind: "token-bucket", Rate: 5, IntervalMS: 2, PerSecond: 500}}})
	fs := newFakeServer(t, map[string]templ.Component{"limiters": lims})
	at := t0.UnixMilli()
	tb := open(t, fs, "/p/limiters")
	c := fs.conn(t)
	info := map[string]any{"m": map[string]any{"rate": 5}, "n": map[string]any{"rate": 5}}
	kinds := map[string]any{"m": "token-bucket", "n": "token-bucket"}
	delta := func(at int64, extra map[string]any) map[string]any {
		f := map[string]any{"type": "stats", "delta": true, "bucket_ms": 200, "window_ms": 1000, "at": at,
			"limiters": map[string]any{}, "locks": map[string]any{}, "available": map[string]any{},
			"pttl_ms": map[string]any{}, "removed": []any{}, "limiter_count": 2, "discovered_at": at}
		for k, v := range extra {
			f[k] = v
		}
		return f
	}
	// Ignored: no full frame yet.
	send(t, c, delta(at, map[string]any{"limiters": map[string]any{"m": map[string]any{"acquired": 99}}}))
	send(t, c, stats(at, map[string]any{
		"limiters":     map[string]any{"m": map[string]any{"acquired": 3}, "n": map[string]any{"acquired": 4}},
		"limiter_info": info, "kinds": kinds, "limiter_count": 2, "discovered_at": at,
	}))
	tb.frames(1)
	send(t, c, delta(at+200, map[string]any{"limiters": map[string]any{"m": map[string]any{"acquired": 7}}}))
	tb.frames(2)
	acq := `() => [...document.querySelectorAll('[data-testid="limiter-row"]')].map(r => r.dataset.limiter + "=" + r.querySelector('[data-field="acquired"]').textContent)`
	if got := fmt.Sprint(tb.eval(acq)); got != "[m=7 n=4]" {
		t.Errorf("after a delta: %s, want [m=7 n=4]", got)
	}
	if got := tb.eval(`() => document.body.dataset.frames`); got != "2" {
		t.Errorf("frames applied %v, want 2 (the early delta ignored)", got)
	}
}

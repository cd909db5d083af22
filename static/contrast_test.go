package static_test

import (
	"testing"
	"time"

	"github.com/a-h/templ"

	"github.com/lockwarden/lockwarden/views"
)

// contrastJS is, for every element matching its argument, its text and the
// WCAG contrast ratio of that text (blended by its opacity) against the
// first opaque background behind it.
const contrastJS = `(sel) => {
	const rgb = s => s.match(/[\d.]+/g).map(Number);
	const lum = ([r, g, b]) => {
		const f = c => { c /= 255; return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4); };
		return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
	};
	const bg = el => {
		for (; el; el = el.parentElement) {
			const c = rgb(getComputedStyle(el).backgroundColor);
			if (c.length < 4 || c[3] > 0) return c.slice(0, 3);
		}
		return [255, 255, 255];
	};
	// Opacity blends the text into what is behind it.
	const opacity = el => { let o = 1; for (; el; el = el.parentElement) o *= Number(getComputedStyle(el).opacity); return o; };
	return [...document.querySelectorAll(sel)].map(el => {
		const back = bg(el), o = opacity(el);
		const fg = rgb(getComputedStyle(el).color).slice(0, 3).map((c, i) => o * c + (1 - o) * back[i]);
		const a = lum(fg), b = lum(back);
		return [el.textContent.trim(), (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)];
	});
}`

// Alerts and the deadlock banner keep a contrast of at least 4.5:1 (WCAG
// AA), on the overview and on the wall, which is read from across a room
// (its light blue links made a critical alert 1.8:1 on its pink).
func TestStaticAlertsReadable(t *testing.T) {
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	alerts := []views.AlertRow{
		{Rule: "lock-lease-lost", Name: "a", Severity: "critical", Message: "lock a: the lease ran out", Since: since},
		{Rule: "limiter-reject-ratio", Name: "b", Severity: "warning", Message: "limiter b rejected 9 of 10", Since: since},
	}
	fs := newFakeServer(t, map[string]templ.Component{
		"wall":     views.Wall(views.WallPage{Layout: views.Layout{Title: "Wall", Deadlocks: 1}, Alerts: alerts}),
		"overview": views.Overview(views.OverviewPage{Layout: views.Layout{Title: "Overview", Deadlocks: 1}, Alerts: alerts}),
	})
	for _, page := range []string{"wall", "overview"} {
		tb := open(t, fs, "/p/"+page)
		got := tb.eval(contrastJS, "[data-testid=alert] .alert-rule, [data-testid=alert] .alert-message, [data-testid=alert] .alert-since, "+
			"[data-testid=deadlock-banner] [data-field=deadlock-text], [data-testid=deadlock-banner-link]").([]any)
		if len(got) != 8 {
			t.Fatalf("%s: contrast of %d alert and banner texts, want 8: %v", page, len(got), got)
		}
		for _, g := range got {
			pair := g.([]any)
			if ratio := pair[1].(float64); ratio < 4.5 {
				t.Errorf("%s: %q: contrast %.1f:1, under 4.5:1", page, pair[0], ratio)
			}
		}
	}
}

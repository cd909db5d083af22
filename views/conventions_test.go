package views

import (
	"strings"
	"testing"
)

// Another library's limiter: why it was recognised, its facts, and a reset
// form that says what the reset does instead of a rate edit.
func TestViewConventionLimiter(t *testing.T) {
	l := LimiterRow{Name: "b_mailer_settings", Kind: "bottleneck", Rate: 1, IntervalMS: 60000,
		Resettable: true, ResetText: "Refills the reservoir to its refresh amount (1) now.",
		Recognised: "bottleneck: hash b_<id>_settings", Facts: []Fact{{"reservoir", "0"}, {"running", "1"}}}
	d := render(t, LimiterDetail(LimiterDetailPage{Layout: layout(NavLimiters), Limiter: l}))
	if text(t, d.Selection, "limiter-recognised") != l.Recognised {
		t.Errorf("recognised %q", text(t, d.Selection, "limiter-recognised"))
	}
	if facts := d.Find(tid("limiter-fact")); facts.Length() != 2 || attr(t, facts.First(), "data-fact") != "reservoir" {
		t.Errorf("facts %q", d.Find("dl").Text())
	}
	if d.Find(tid("limiter-form")).Length() != 0 || attr(t, one(t, d.Selection, "counter-reset-form"), "action") != ResetCounterURL(l.Name) ||
		!strings.Contains(text(t, d.Selection, "counter-reset-text"), "Refills the reservoir") {
		t.Errorf("forms: %q", d.Find("form").Text())
	}
}

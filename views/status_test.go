package views

import (
	"strings"
	"testing"
	"time"
)

// An operator whose keyspace outgrew the budget is told what budget the
// pass target needs, not only that passes run long.
func TestStatusModeSuggestsBudgetForTarget(t *testing.T) {
	m := StatusPage{Scanning: true, PassTarget: time.Minute, Budget: 0.03, BudgetPass: 2 * time.Minute, Keyspace: 1_000_000}
	got := statusMode(m)
	if !strings.Contains(got, "a pass of 1m0s needs --discovery-budget=6.0%") {
		t.Errorf("mode %q does not give the budget a 60 s pass needs", got)
	}
	m.BudgetPass = 40 * time.Second
	if got := statusMode(m); strings.Contains(got, "needs --discovery-budget") {
		t.Errorf("mode %q suggests a budget although the target is met", got)
	}
}

func TestStatusPageShowsRejects(t *testing.T) {
	doc := render(t, Status(StatusPage{Layout: layout("status"), Scanning: true, PassTarget: time.Minute, Budget: 0.03, RejectsRemembered: 305, RejectsSkipped: 1220}))
	if got := text(t, doc.Selection, "status-rejects"); got != "305 remembered; 1220 listings skipped" {
		t.Errorf("rejected hashes line %q", got)
	}
}

// Full passes take three fifths of the budget; the page said the whole.
func TestStatusModeFullPassesShare(t *testing.T) {
	got := statusMode(StatusPage{PassTarget: time.Second, Budget: 0.045})
	if !strings.Contains(got, "three fifths of the console's 4.5 %") {
		t.Errorf("mode %q", got)
	}
}

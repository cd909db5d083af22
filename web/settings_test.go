package web

import (
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/lockwarden/lockwarden/web/live"
)

// A Redis that may evict held locks, and that announces no evictions,
// is named on /status and alerted, each with the exact fix; a fenced
// lock on a Redis that keeps nothing across a restart too.
func TestSettingsThatBreakExclusion(t *testing.T) {
	srv := redistest.StartT(t, "--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru")
	rdb := redistest.NewClient(t, srv)
	e := newEnvOn(t, rdb, fastTicks)
	if err := e.app.NewFencedLock(e.prefix+"fenced", nil).TryLock(t.Context()); err != nil {
		t.Fatal(err)
	}
	var st struct {
		Settings []live.SettingProblem `json:"settings"`
	}
	want := []string{live.SettingEvictsLocks, live.SettingKeyspaceEventsOff, live.SettingFencingNotKept}
	eventually(t, redistest.Patience, "the settings on /api/status", func() bool {
		e.getJSON("/api/status", 200, &st)
		return len(st.Settings) == len(want)
	})
	for i, p := range st.Settings {
		if p.Rule != want[i] || p.Node != srv.Addr || p.Fix == "" {
			t.Errorf("setting %d: %+v, want %s on %s with its fix", i, p, want[i], srv.Addr)
		}
	}
	if !strings.Contains(st.Settings[0].Fix, "CONFIG SET maxmemory-policy noeviction") {
		t.Errorf("eviction fix %q", st.Settings[0].Fix)
	}
	eventually(t, 10*time.Second, "the alerts", func() bool {
		var out alertsJSON
		e.getJSON("/api/alerts", 200, &out)
		n := 0
		for _, al := range out.Alerts {
			for _, w := range want {
				if al.Rule == w && al.Name == srv.Addr && strings.Contains(al.Message, "Fix: ") {
					n++
				}
			}
		}
		return n == len(want)
	})
	_, _, page := e.do("GET", "/status", nil, nil)
	if !strings.Contains(string(page), `data-testid="status-settings"`) || !strings.Contains(string(page), "CONFIG SET notify-keyspace-events Eghxe") {
		t.Error("/status does not name the settings and their fixes")
	}
}

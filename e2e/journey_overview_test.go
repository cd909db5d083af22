package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
)

// Journey 1: a newcomer opens the overview of a console over a Redis with
// traffic and sees locks, limiters and live numbers changing.
func TestJourney1OverviewShowsLiveTraffic(t *testing.T) {
	j := newJourney(t)
	// Two services: an API limiter that is overrun (200 attempts/s against
	// 100/s) and an idle login limiter; two locks held by two instances.
	j.bucket("shop:api", 50, 10)
	j.bucket("shop:login", 5, 200)
	api := j.limiterLoad("shop:api", 4, 20*time.Millisecond)
	appA, appB := store.New(j.rdb, nil), store.New(j.rdb, nil)
	orders := j.holdLock(appA, "shop:lock:orders", "thread-1")
	billing := j.holdLock(appB, "shop:lock:billing", "thread-7")

	resp := j.open("/")
	// Every value the counts take from now on is recorded.
	j.eval(`() => {
		window.__counts = [];
		document.querySelectorAll("[data-count]").forEach(el => new MutationObserver(() =>
			window.__counts.push(el.dataset.count + "=" + el.textContent)).observe(el, {childList: true, characterData: true, subtree: true}));
	}`, nil)
	lockCount := `[data-testid=card-locks] [data-testid=lock-count]`
	limiterCount := `[data-testid=card-limiters] [data-testid=limiter-count]`
	if got := j.served(resp, lockCount); got != "2" {
		t.Errorf("overview says %s locks held; Redis holds 2", got)
	}
	if got := j.served(resp, limiterCount); got != "2" {
		t.Errorf("overview says %s limiters; Redis has 2", got)
	}
	// The busiest limiter comes first, and its row shows its configuration
	// as Redis has it.
	if first := j.served(resp, `[data-testid=busiest-table] [data-testid=limiter-row] [data-testid=limiter-link]`); first != "shop:api" {
		t.Errorf("busiest limiter listed first is %q, want shop:api (the one with traffic)", first)
	}
	row := `[data-testid=busiest-table] [data-testid=limiter-row][data-limiter="shop:api"]`
	h := j.hgetall("shop:api")
	if got := j.text(row + ` [data-testid=limiter-rate]`); got != h["max_permits"] {
		t.Errorf("shop:api rate shown %s, max_permits in Redis %s", got, h["max_permits"])
	}
	if j.count(`[data-testid=busiest-table] [data-testid=limiter-row][data-limiter="shop:login"]`) != 1 {
		t.Errorf("shop:login is not listed on the overview")
	}

	// Live: the page connects and the window numbers move with the traffic,
	// without a reload.
	j.waitLive(1)
	if got := j.text(`[data-testid=ws-status]`); got != "live" {
		t.Errorf("connection indicator says %q, want live", got)
	}
	acquired := row + ` [data-testid=acquired]`
	rejected := row + ` [data-testid=rejected]`
	seen := map[string]bool{}
	j.waitText("the acquired count of shop:api to change at least twice", acquired, 10*time.Second, func(s string) bool {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 {
			seen[s] = true
		}
		return len(seen) >= 2
	})
	j.waitText("rejections of the overrun limiter", rejected, 10*time.Second, func(s string) bool {
		n, err := strconv.ParseInt(s, 10, 64)
		return err == nil && n > 0
	})
	// What the page shows is what the traffic did: Redis recorded outcomes
	// in the same window, and a 1 s window of a 50-permit, 100/s bucket
	// cannot admit more than 150 (+ a bucket's worth of slack for the
	// window's edges).
	if n := j.number(acquired); n > 150+20 {
		t.Errorf("shop:api shows %d acquired in 1 s; the bucket cannot admit that many", n)
	}
	if w := j.windowOf("shop:api"); w.Acquired == 0 || w.Rejected == 0 {
		t.Errorf("Redis stats window of shop:api = %+v; want acquired and rejected", w)
	}
	if api.acquired.Load() == 0 || api.rejected.Load() == 0 {
		t.Errorf("the traffic itself saw acquired=%d rejected=%d", api.acquired.Load(), api.rejected.Load())
	}

	// After more than a discovery period of live frames the counts agree
	// with Redis.
	j.waitLive(8)
	if got := j.text(lockCount); got != "2" {
		t.Errorf("live lock count %s; Redis holds 2", got)
	}
	if got := j.text(limiterCount); got != "2" {
		t.Errorf("live limiter count %s; Redis has 2", got)
	}
	// Nor did they ever step back to a stale value on the way.
	if got := fmt.Sprint(j.eval(`() => window.__counts`, nil)); strings.Contains(got, "=0") {
		t.Errorf("the overview counts went through %s although Redis held 2 locks and 2 limiters throughout", got)
	}

	// The locks card leads to the locks, with their holders as Redis has them.
	j.clickTo(`[data-testid=card-locks]`)
	if p := j.pathOf(); p != "/locks" {
		t.Fatalf("the locks card leads to %s", p)
	}
	for _, l := range []*store.Lock{orders, billing} {
		holders := j.text(`[data-testid=lock-row][data-lock="` + l.Name() + `"] [data-testid=lock-holders]`)
		if !strings.Contains(holders, l.HolderID()+" ×1") {
			t.Errorf("%s holders shown %q, want %s ×1", l.Name(), holders, l.HolderID())
		}
		if got := j.redissonFields(l.Name()); got[l.HolderID()] != "1" || len(got) != 1 {
			t.Errorf("Redis hash of %s = %v, want only %s = 1", l.Name(), got, l.HolderID())
		}
	}
}

// Journey 7: resilience. The console restarts under an open wall page; the
// page notices, reconnects by itself and goes on updating without a reload.
func TestJourney7WallSurvivesConsoleRestart(t *testing.T) {
	j := newJourney(t)
	const name = "edge:api"
	j.bucket(name, 30, 20)
	j.limiterLoad(name, 2, 20*time.Millisecond)
	// While the console is down the browser reports each refused
	// reconnection attempt on its console; those, and only those, are
	// expected here.
	wsURL := "ws://" + j.con.listen + "/ws"
	j.tab.log.allow("reconnect attempts while the console restarts", func(kind, text, u string) bool {
		return kind == "error" && strings.Contains(text, "WebSocket connection to '"+wsURL+"' failed")
	})

	j.open("/wall")
	j.waitLive(3)
	// A marker that a reload would wipe, and a record of every change of the
	// connection state.
	j.eval(`() => {
		window.__sameDocument = true;
		window.__ws = [document.body.dataset.ws];
		new MutationObserver(() => window.__ws.push(document.body.dataset.ws))
			.observe(document.body, {attributes: true, attributeFilter: ["data-ws"]});
	}`, nil)

	j.con.restart()
	j.waitJS("the page to see the connection drop", `() => window.__ws.includes("closed")`, nil, 10*time.Second)
	j.waitJS("the page to reconnect", `() => {
		const i = window.__ws.indexOf("closed");
		return i >= 0 && window.__ws.indexOf("open", i) > i;
	}`, nil, 15*time.Second)
	if j.eval(`() => window.__sameDocument === true`, nil) != true {
		t.Fatal("the page was reloaded; it must reconnect in place")
	}
	if got := j.text(`[data-testid=ws-status]`); got != "live" {
		t.Errorf("connection indicator says %q after reconnecting", got)
	}
	resumed := j.frames()
	j.waitJS("frames to keep arriving after the reconnect", `n => Number(document.body.dataset.frames) >= n + 5`, resumed, 10*time.Second)

	// The numbers after the restart are live ones, as in Redis.
	tile := `[data-testid=wall-tile][data-limiter="` + name + `"]`
	j.waitText("acquisitions after the restart", tile+` [data-testid=acquired]`, 5*time.Second, positive)
	if w := j.windowOf(name); w.Acquired == 0 {
		t.Errorf("Redis stats window after the restart = %+v", w)
	}
	if h := j.hgetall(name); h["max_permits"] != "30" {
		t.Errorf("the limiter in Redis changed across the restart: %v", h)
	}
}

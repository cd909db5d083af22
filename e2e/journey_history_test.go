package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// reopenUntil reloads path until sel matches at least n elements: the
// history is written once per 10 s step, and pages read what was written.
func (j *journey) reopenUntil(what, path, sel string, n int) {
	j.t.Helper()
	redistest.EventuallyWithin(j.t, 30*time.Second, what, func() bool {
		j.open(path)
		return j.count(sel) >= n
	})
}

// Journey: what happened, and what if. Traffic on a limiter shows on its
// hour chart with the exact counts on hover; a rate edit puts a marker on
// the chart; the edit form's "What if?" replays the hour at the typed rate
// beside what happened, changing nothing; the day's chart and the overview
// show the same traffic; a held lock is a strip on its timeline, and a
// contended one has its waits beneath.
func TestJourneyHistory(t *testing.T) {
	j := newJourney(t)
	const name, lock = "orders:api", "orders:lock"
	j.bucket(name, 5, 200) // 5 permits, 5/s
	j.holdLock(store.New(j.rdb, nil), lock, "worker-1")
	j.open("/limiters") // waits until the console lists the bucket
	traffic := j.limiterLoad(name, 2, 50*time.Millisecond)
	redistest.EventuallyWithin(t, 10*time.Second, "rejections", func() bool { return traffic.rejected.Load() > 20 })
	traffic.stop()
	acq, rej := traffic.acquired.Load(), traffic.rejected.Load()

	// The hour: bars whose titles add up to the attempts made.
	page := "/limiters/" + name
	bar := `[data-testid=history-chart] [data-testid=chart-bar]`
	var gotAcq, gotRej int64
	redistest.EventuallyWithin(t, 30*time.Second, "the traffic on the hour chart", func() bool {
		j.open(page)
		gotAcq, gotRej = 0, 0
		for _, title := range j.allTexts(bar + ` title`) {
			a, r := titleCounts(t, title)
			gotAcq, gotRej = gotAcq+a, gotRej+r
		}
		return gotAcq == acq && gotRej == rej
	})
	if span, _ := j.tab.Locator(`[data-testid=history-chart]`).GetAttribute("data-span"); span != "1h" {
		t.Errorf("the limiter page's chart spans %q, want 1h", span)
	}

	// A rate edit is a marker on the chart.
	j.fill(`[data-testid=input-rate]`, "8")
	j.fill(`[data-testid=input-interval_ms]`, "200")
	j.fill(`[data-testid=input-reason]`, "e2e: slower")
	j.clickTo(`[data-testid=limiter-save]`)
	j.clickTo(`[data-testid=limiter-confirm]`)
	marker := `[data-testid=history-chart] [data-testid=chart-marker]`
	j.reopenUntil("a marker at the edit", page, marker, 1)
	if title := j.rawText(marker + ` title`); !strings.Contains(title, "rate=8") {
		t.Errorf("marker title %q does not say what changed", title)
	}

	// What if one permit a day: one attempt admitted, the rest rejected.
	before := j.hgetall(name)
	j.fill(`[data-testid=input-rate]`, "1")
	j.fill(`[data-testid=input-interval_ms]`, "86400000")
	j.clickTo(`[data-testid=whatif-run]`)
	if got := j.text(`[data-testid=whatif-result] [data-testid=whatif-admitted]`); got != "1" {
		t.Errorf("what-if admitted %q, want 1", got)
	}
	happened := j.allTexts(`[data-testid=whatif-actual] td`)
	if len(happened) != 2 || happened[0] != strconv.FormatInt(acq, 10) || happened[1] != strconv.FormatInt(rej, 10) {
		t.Errorf("what happened: %v, want %d admitted, %d rejected", happened, acq, rej)
	}
	if got := j.text(`[data-testid=whatif-rejected]`); got != strconv.FormatInt(acq+rej-1, 10) {
		t.Errorf("what-if rejected %q, want %d", got, acq+rej-1)
	}
	if after := j.hgetall(name); after["max_permits"] != before["max_permits"] || after["interval"] != before["interval"] {
		t.Errorf("the what-if changed the bucket: %v -> %v", before, after)
	}
	if v, _ := j.tab.Locator(`[data-testid=input-rate]`).InputValue(); v != "1" {
		t.Errorf("the typed rate came back as %q", v)
	}

	// The day, per minute, holds the same attempts.
	j.clickTo(`[data-testid=span-24h]`)
	if span, _ := j.tab.Locator(`[data-testid=history-chart]`).GetAttribute("data-span"); span != "24h" {
		t.Errorf("after the 24 h link the chart spans %q", span)
	}
	var dayAcq int64
	for _, title := range j.allTexts(bar + ` title`) {
		a, _ := titleCounts(t, title)
		dayAcq += a
	}
	if dayAcq != acq {
		t.Errorf("the day's bars hold %d acquired, the hour's %d", dayAcq, acq)
	}
	j.open("/")
	if j.count(`[data-testid=overview-chart] [data-testid=chart-bar]`) == 0 {
		t.Errorf("the overview shows no 24 h thumbnail with the traffic")
	}

	// The lock's timeline: worker-1's running hold.
	hold := `[data-testid=lock-timeline] [data-testid=timeline-hold]`
	j.reopenUntil("the hold on the lock's timeline", "/locks/"+lock, hold, 1)
	if h, _ := j.tab.Locator(hold).First().GetAttribute("data-holder"); !strings.HasSuffix(h, ":worker-1") {
		t.Errorf("timeline hold of %q, want worker-1's", h)
	}
	if title := j.rawText(hold + ` title`); !strings.Contains(title, "still held") {
		t.Errorf("hold title %q, want it still held", title)
	}
	if j.count(`[data-testid=timeline-client]`) != 1 {
		t.Errorf("want one client in the timeline's key")
	}

	// A lock two applications contend for: its wait beneath the holders,
	// and the lock among the overview's most contended.
	const settle = "orders:settle"
	first := j.holdLock(store.New(j.rdb, nil), settle, "settler-1")
	second := store.New(j.rdb, nil).NewLock(settle, &store.LockOptions{Owner: "settler-2"})
	got := make(chan error, 1)
	go func() { got <- second.Lock(j.ctx) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(j.ctx), 2*time.Second)
		defer cancel()
		second.Unlock(ctx)
	})
	redistest.EventuallyWithin(t, 5*time.Second, "the second settler to queue", func() bool {
		return j.rdb.Exists(j.ctx, redistest.LockQueueKey(settle)).Val() == 1
	})
	if err := first.Unlock(j.ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	wait := `[data-testid=lock-timeline] [data-testid=timeline-waits] [data-testid=timeline-wait][data-contended="1"]`
	j.reopenUntil("the wait beneath the lock's holders", "/locks/"+settle, wait, 1)
	if title := j.rawText(wait + ` title`); !strings.Contains(title, "1 contended") {
		t.Errorf("wait title %q, want the contended acquisition", title)
	}
	j.open("/")
	if got := j.allTexts(`[data-testid=overview-lock-chart] .thumb-name`); len(got) != 1 || got[0] != settle {
		t.Errorf("the overview's most contended locks: %v, want %s", got, settle)
	}
}

// titleCounts reads "… UTC: N acquired, M rejected, E errors".
func titleCounts(t *testing.T, title string) (acq, rej int64) {
	t.Helper()
	_, rest, ok := strings.Cut(title, "UTC: ")
	f := strings.Fields(rest)
	if !ok || len(f) < 4 {
		t.Fatalf("bar title %q", title)
	}
	acq, _ = strconv.ParseInt(f[0], 10, 64)
	rej, _ = strconv.ParseInt(f[2], 10, 64)
	return acq, rej
}

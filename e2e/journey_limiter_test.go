package e2e

import (
	"github.com/lockwarden/lockwarden/store/redistest"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Journey 5: edit a limiter. Invalid values are explained next to their
// field and change nothing in Redis; valid values go through the modify
// script, show on the page and are in the Redis hash.
func TestJourney5EditLimiter(t *testing.T) {
	j := newJourney(t)
	const name = "billing:api"
	j.bucket(name, 100, 10) // full: 100 stored permits, 100/s
	initial := j.hgetall(name)

	j.open("/limiters")
	j.clickTo(`[data-testid=limiter-row][data-limiter="` + name + `"] [data-testid=limiter-link]`)
	if got := j.text(`[data-testid=limiter-name]`); got != name {
		t.Fatalf("limiter page is for %q", got)
	}
	if got := j.text(`[data-testid=limiter-rate]`); got != "100" {
		t.Errorf("rate shown %q, want 100", got)
	}

	path := j.pathOf()
	j.allowStatus(path, 400) // every rejected submission re-renders with 400
	invalid := []struct {
		rate, interval string
		field, other   string // where the message must be, and must not be
		says           string
	}{
		{"abc", "10", "rate", "interval_ms", "whole number"},
		{"0", "10", "rate", "interval_ms", "at least 1"},
		{"2.5", "10", "rate", "interval_ms", "whole number"},
		{"", "10", "rate", "interval_ms", "required"},
		{"50", "-5", "interval_ms", "rate", "greater than 0"},
		{"50", "0", "interval_ms", "rate", "greater than 0"},
		{"50", "soon", "interval_ms", "rate", "milliseconds"},
	}
	j.fill(`[data-testid=input-reason]`, "e2e: a valid reason, so only the field at fault complains")
	for _, c := range invalid {
		j.fill(`[data-testid=input-rate]`, c.rate)
		j.fill(`[data-testid=input-interval_ms]`, c.interval)
		resp := j.clickTo(`[data-testid=limiter-save]`)
		if resp.Status() != 400 {
			t.Errorf("rate %q interval %q: answered %d, want 400", c.rate, c.interval, resp.Status())
		}
		msg := `[data-testid=field-` + c.field + `] [data-testid=error-` + c.field + `]`
		if j.count(msg) != 1 {
			t.Errorf("rate %q interval %q: no message under the %s field", c.rate, c.interval, c.field)
		} else if got := j.text(msg); !strings.Contains(got, c.says) {
			t.Errorf("rate %q interval %q: %s message %q, want it to say %q", c.rate, c.interval, c.field, got, c.says)
		}
		if j.count(`[data-testid=error-`+c.other+`]`) != 0 {
			t.Errorf("rate %q interval %q: a message under %s too", c.rate, c.interval, c.other)
		}
		if inv, _ := j.tab.Locator(`[data-testid=input-` + c.field + `]`).GetAttribute("aria-invalid"); inv != "true" {
			t.Errorf("rate %q interval %q: the %s input is not marked invalid", c.rate, c.interval, c.field)
		}
		// What was typed comes back, so it can be corrected.
		if v, _ := j.tab.Locator(`[data-testid=input-rate]`).InputValue(); v != c.rate {
			t.Errorf("rate field came back as %q, typed %q", v, c.rate)
		}
		if v, _ := j.tab.Locator(`[data-testid=input-interval_ms]`).InputValue(); v != c.interval {
			t.Errorf("interval field came back as %q, typed %q", v, c.interval)
		}
		if got := j.hgetall(name); !maps.Equal(got, initial) {
			t.Fatalf("rate %q interval %q changed Redis: %v -> %v", c.rate, c.interval, initial, got)
		}
	}

	// A valid change: 40 permits, one per 25 ms. The modify script settles
	// the bucket first (full, so last_mill_second moves to now) and clamps
	// the stored permits to the new capacity; a plain HSET of the two
	// fields would do neither.
	clicked := j.redisNowMS()
	j.fill(`[data-testid=input-rate]`, "40")
	j.fill(`[data-testid=input-interval_ms]`, "25")
	j.fill(`[data-testid=input-reason]`, "e2e: partner launch")
	// The first step confirms, what-if first; nothing changes yet.
	j.clickTo(`[data-testid=limiter-save]`)
	if got := j.text(`[data-testid=limiter-confirm-to]`); got != "capacity 40, refill one every 25 ms (40 per second)" {
		t.Errorf("the confirmation says the new rule is %q", got)
	}
	if j.count(`[data-testid=limiter-confirm-page] [data-testid=whatif-result]`) != 1 {
		t.Error("the confirmation does not show the what-if")
	}
	if got := j.hgetall(name); !maps.Equal(got, initial) {
		t.Fatalf("the confirmation step changed Redis: %v -> %v", initial, got)
	}
	resp := j.clickTo(`[data-testid=limiter-confirm]`)
	if resp.Status() != 200 || j.pathOf() != path {
		t.Fatalf("saving led to %s (%d), want the limiter page", j.tab.URL(), resp.Status())
	}
	if got := j.text(`[data-testid=flash]`); !strings.Contains(got, name) || !strings.Contains(got, "updated") {
		t.Errorf("flash after save = %q", got)
	}
	for sel, want := range map[string]string{
		`[data-testid=limiter-rate]`:       "40",
		`[data-testid=limiter-interval]`:   "25",
		`[data-testid=limiter-per-second]`: "40",
	} {
		if got := j.text(sel); got != want {
			t.Errorf("%s shows %q after save, want %q", sel, got, want)
		}
	}
	if got := j.count(`[data-testid=field-rate] [data-testid=error-rate]`); got != 0 {
		t.Errorf("an error is still shown after a valid save")
	}
	h := j.hgetall(name)
	if h["max_permits"] != "40" || h["interval"] != "25" {
		t.Errorf("Redis hash after save: max_permits %q interval %q, want 40 and 25", h["max_permits"], h["interval"])
	}
	if stored, _ := strconv.ParseFloat(h["stored_permits"], 64); stored != 40 {
		t.Errorf("stored_permits = %q, want 40 (clamped to the new capacity)", h["stored_permits"])
	}
	if last, _ := strconv.ParseFloat(h["last_mill_second"], 64); int64(last) < clicked {
		t.Errorf("last_mill_second = %q, before the save at %d: the bucket was not settled by the modify script", h["last_mill_second"], clicked)
	}
	if h["app"] != initial["app"] {
		t.Errorf("app changed from %q to %q", initial["app"], h["app"])
	}
	// The list agrees.
	j.clickTo(`[data-testid=nav-limiters]`)
	if got := j.text(`[data-testid=limiter-row][data-limiter="` + name + `"] [data-testid=limiter-rate]`); got != "40" {
		t.Errorf("limiters list shows rate %q after save", got)
	}
}

// Journey 6: live stats. While traffic runs, a limiter's 1 s acquired and
// rejected numbers move; the wall keeps receiving stats frames.
func TestJourney6LiveStats(t *testing.T) {
	j := newJourney(t)
	const name = "search:api"
	j.bucket(name, 20, 20) // 50/s
	traffic := j.limiterLoad(name, 4, 20*time.Millisecond)

	j.open("/wall")
	j.waitLive(1)
	// Frames keep coming; their rate is make bench's case 5 (ticks/s).
	start := j.frames()
	redistest.EventuallyWithin(t, 10*time.Second, "8 more stats frames on the wall", func() bool { return j.frames()-start >= 8 })
	end := j.frames()
	if got := j.text(`[data-testid=frame-counter]`); got != strconv.Itoa(j.frames()) && got != strconv.Itoa(end) {
		t.Errorf("frame counter shows %s, body counts %d", got, end)
	}
	tile := `[data-testid=wall-tile][data-limiter="` + name + `"]`
	j.waitText("acquisitions on the wall tile", tile+` [data-testid=acquired]`, 5*time.Second, positive)
	j.waitText("rejections on the wall tile", tile+` [data-testid=rejected]`, 5*time.Second, positive)
	// 4 workers at 50/s each against 50/s: most attempts are rejected, so
	// the tile is red.
	j.waitJS("the reject ratio to turn the tile red", `sel => {
		const el = document.querySelector(sel);
		return el && el.classList.contains("ratio-bad");
	}`, tile+` [data-testid=ratio]`, 5*time.Second)

	// On the limiter's own page the window numbers follow the traffic: up
	// while it runs, back to zero after it stops — all without a reload.
	j.open("/limiters/" + name)
	j.waitLive(1)
	acquired := `[data-testid=limiter-detail] [data-testid=acquired]`
	rejected := `[data-testid=limiter-detail] [data-testid=rejected]`
	busy := j.waitText("acquired while traffic runs", acquired, 5*time.Second, positive)
	j.waitText("rejected while traffic runs", rejected, 5*time.Second, positive)
	if n, _ := strconv.Atoi(busy); n > 20+50+10 {
		t.Errorf("the page shows %d acquired in 1 s from a 20-permit, 50/s bucket", n)
	}
	if w := j.windowOf(name); w.Acquired == 0 || w.Rejected == 0 {
		t.Errorf("Redis stats window while traffic runs = %+v", w)
	}
	rows := j.count(`[data-testid=rolling-row]`)
	traffic.stop()
	j.waitText("acquired to fall to 0 after the traffic stops", acquired, 5*time.Second, isZero)
	j.waitText("rejected to fall to 0 after the traffic stops", rejected, 5*time.Second, isZero)
	if w := j.windowOf(name); w.Acquired != 0 || w.Rejected != 0 {
		t.Errorf("Redis stats window after the traffic stopped = %+v, want zero", w)
	}
	if got := j.count(`[data-testid=rolling-row]`); got <= rows {
		t.Errorf("rolling summaries did not grow: %d rows before, %d after", rows, got)
	}
	if traffic.acquired.Load() == 0 || traffic.rejected.Load() == 0 {
		t.Errorf("the traffic saw acquired=%d rejected=%d", traffic.acquired.Load(), traffic.rejected.Load())
	}
}

func positive(s string) bool {
	n, err := strconv.ParseInt(s, 10, 64)
	return err == nil && n > 0
}

func isZero(s string) bool { return s == "0" }

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// Journey: exclusion broken. billing holds the ledger on a fixed 1 s
// lease and works on for 3 s while shipping takes it. The ledger's page
// says exclusion may have been broken, and its timeline draws billing's
// hold as expired, its work past the lease up to the late release, and
// the time both held it in red.
func TestJourneyLeaseLost(t *testing.T) {
	j := newJourney(t)
	const name = "ledger"
	billing := store.New(j.rdb, &store.Options{App: "billing"})
	shipping := store.New(j.rdb, &store.Options{App: "shipping"})
	t.Cleanup(func() { _ = billing.Close(); _ = shipping.Close() })
	first := billing.NewLock(name, &store.LockOptions{NoWatchdog: true, Lease: time.Second})
	second := shipping.NewLock(name, nil)
	sent := time.Now()
	if err := first.TryLock(j.ctx); err != nil {
		t.Fatal(err)
	}
	j.wrote(name, "locks")
	got := make(chan error, 1)
	go func() { got <- second.Lock(j.ctx) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(j.ctx), 2*time.Second)
		defer cancel()
		_ = second.Unlock(ctx)
	})
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(sent.Add(3 * time.Second))) // billing works on regardless
	if err := first.Unlock(j.ctx); !errors.Is(err, store.ErrNotHeld) {
		t.Fatalf("late Unlock = %v, want ErrNotHeld", err)
	}

	// The holds as the timeline drew them (static/chartlocks.js): times
	// in Unix seconds, lived past to when the holder worked on.
	var drawn struct {
		Holds []struct {
			Holder   string
			From, To float64
			Lived    float64
			Ended    string
		}
		Overlaps []struct{ From, To float64 }
	}
	timeline := `[data-testid=lock-timeline] [data-testid=chart-plot]`
	redistest.EventuallyWithin(t, 60*time.Second, "billing's late work over shipping's hold, drawn in red", func() bool {
		j.open("/locks/" + name)
		c, ok := j.drewChart(timeline)
		if !ok || json.Unmarshal(c.Points, &drawn) != nil || len(drawn.Overlaps) == 0 {
			return false
		}
		for _, h := range drawn.Holds {
			if h.Holder == first.HolderID() {
				return h.Ended == "expired" && h.Lived > h.To
			}
		}
		return false
	})
	for _, h := range drawn.Holds {
		if h.Holder == first.HolderID() {
			if d := h.Lived - h.To; d < 1 || d > 3 {
				t.Errorf("billing worked %.1f s past its lease's end, want about 2 s", d)
			}
			o := drawn.Overlaps[0]
			if o.To != h.Lived || o.From < h.To-0.5 {
				t.Errorf("overlap %.1f-%.1f, want from about billing's end %.1f to its late release %.1f", o.From, o.To, h.To, h.Lived)
			}
		}
	}
	if s := j.text(`[data-testid=lock-timeline] [data-testid=chart-summary]`); !strings.Contains(s, "1 overlap: two holders at once.") ||
		!strings.Contains(s, "1 expired") {
		t.Errorf("timeline summary %q: want the overlap and the expiry", s)
	}
	kinds := j.allTexts(`[data-testid=lease-violation] strong`)
	if strings.Join(kinds, ",") != "expired-while-working,released-after-expiry" {
		t.Errorf("the page lists violations %q", kinds)
	}
}

package admin

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// fakeLive records what the actions asked to refresh.
type fakeLive struct {
	mu      sync.Mutex
	locks   []string
	holders map[string][]inspect.Hold
}

func (f *fakeLive) Holds(id string) []inspect.Hold { return f.holders[id] }

func (f *fakeLive) Refresh(_ context.Context, locks, _ []string) {
	f.mu.Lock()
	f.locks = append(f.locks, locks...)
	f.mu.Unlock()
}

const uuid = "0f8a2c1e-7b3d-4e9f-a6c5-123456789abc"

// A force-unlock runs with no HTTP request around it: a plain actor and
// request in, the lock broken, the live view refreshed, and one audit
// record per call, whatever its outcome.
func TestForceUnlockWithoutHTTP(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := t.Context()
	prefix := redistest.Prefix(t)
	insp := inspect.New(rdb, nil)
	audit := insp.Audit("lw:{audit}:"+prefix, 0)
	t.Cleanup(func() { rdb.Del(context.Background(), audit.Key()) })
	live := &fakeLive{}
	svc := New(Config{Inspector: insp, Audit: audit, Live: live})
	actor := Actor{Role: "admin", Fingerprint: "f00d", Remote: "10.0.0.1", RequestID: "r1"}

	name := prefix + "stuck"
	holder := uuid + ":7"
	if err := rdb.HSet(ctx, name, holder, 2).Err(); err != nil {
		t.Fatal(err)
	}
	rdb.PExpire(ctx, name, time.Minute)

	var ie *InputError
	if _, err := svc.ForceUnlock(ctx, actor, ForceUnlock{Name: name, Holder: holder, Reason: " "}); !errors.As(err, &ie) || ie.Field != FieldReason {
		t.Fatalf("no reason: %v", err)
	}
	var oe *ObjectError
	_, err := svc.ForceUnlock(ctx, actor, ForceUnlock{Name: name, Holder: uuid + ":8", Reason: "stuck"})
	if !errors.As(err, &oe) || !errors.Is(err, inspect.ErrHolderChanged) || len(oe.Holders) != 1 || oe.Holders[0].ID != holder {
		t.Fatalf("wrong holder: %v", err)
	}
	if _, err := svc.ForceUnlock(ctx, actor, ForceUnlock{Name: name, Holder: holder, Reason: "stuck"}); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.Exists(ctx, name).Result(); n != 0 {
		t.Error("lock still there")
	}
	if !slices.Equal(live.locks, []string{name}) {
		t.Errorf("refreshed %v, want the lock once", live.locks)
	}
	recs, err := svc.Recent(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	var outcomes []string
	for _, r := range recs {
		outcomes = append(outcomes, r.Outcome)
		if r.Action != ActionForceUnlock || r.Target != name || r.Role != "admin" || r.Fingerprint != "f00d" ||
			r.Remote != "10.0.0.1" || r.RequestID != "r1" {
			t.Errorf("record %+v", r)
		}
	}
	want := []string{inspect.OutcomeOK, inspect.OutcomeConflict, inspect.OutcomeInvalid} // newest first
	if !slices.Equal(outcomes, want) {
		t.Errorf("outcomes %v, want %v", outcomes, want)
	}
}

func TestCheckEdit(t *testing.T) {
	for _, c := range []struct {
		rate, interval float64
		field          string
	}{{0, 1, "rate"}, {1.5, 1, "rate"}, {1 << 54, 1, "rate"}, {1, 0, "interval_ms"}, {1, 1e9, "interval_ms"}, {5, 2, ""}} {
		e, err := CheckEdit(c.rate, c.interval)
		var ie *InputError
		switch {
		case c.field == "" && (err != nil || e.Rate != 5 || e.IntervalMS != 2):
			t.Errorf("%v/%v: %+v %v", c.rate, c.interval, e, err)
		case c.field != "" && (!errors.As(err, &ie) || ie.Field != c.field):
			t.Errorf("%v/%v: %v, want a %s error", c.rate, c.interval, err, c.field)
		}
	}
}

package admin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

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

// heard records what the listeners were told, in order.
type heard struct {
	mu    sync.Mutex
	holds []string
}

func (h *heard) ForceUnlocked(ctx context.Context, name, holder string, _ time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ctx.Err() == nil {
		h.holds = append(h.holds, name+" "+holder)
	}
}

func (h *heard) got() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.holds)
}

const uuid = "0f8a2c1e-7b3d-4e9f-a6c5-123456789abc"

// testTrail is a change trail of the test's own over the shared Redis,
// with the test's key prefix and an Inspector over it.
func testTrail(t *testing.T) (*redis.Client, string, *inspect.Inspector, *inspect.Audit) {
	t.Helper()
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t)
	insp := inspect.New(rdb, nil)
	audit := insp.AuditTrail("lw:{audit}:"+prefix, 0)
	t.Cleanup(func() { rdb.Del(context.Background(), audit.Key()) })
	return rdb, prefix, insp, audit
}

// A force-unlock runs with no HTTP request around it: a plain actor and
// request in, the lock broken, the live view refreshed, and one audit
// record per call, whatever its outcome.
func TestForceUnlockWithoutHTTP(t *testing.T) {
	rdb, prefix, insp, audit := testTrail(t)
	ctx := t.Context()
	live := &fakeLive{}
	first, second := &heard{}, &heard{}
	svc := New(Config{Inspector: insp, Audit: audit, Live: live, Listeners: []Listener{first, second}})
	actor := Actor{Role: "admin", Fingerprint: "f00d", Remote: "10.0.0.1", RequestID: "r1"}

	name := prefix + "stuck"
	holder := uuid + ":7"
	if err := rdb.HSet(ctx, name, holder, 2).Err(); err != nil {
		t.Fatal(err)
	}
	rdb.PExpire(ctx, name, time.Minute)

	if _, err := svc.ForceUnlock(ctx, actor, ForceUnlock{Name: name, Holder: holder, Reason: " "}); inspect.CodeOf(err) != inspect.CodeInvalid || inspect.ErrorOf(err).Field != FieldReason {
		t.Fatalf("no reason: %v", err)
	}
	res, err := svc.ForceUnlock(ctx, actor, ForceUnlock{Name: name, Holder: uuid + ":8", Reason: "stuck"})
	if inspect.CodeOf(err) != inspect.CodeConflict || !errors.Is(err, inspect.ErrHolderChanged) || len(res.Holders) != 1 || res.Holders[0].ID != holder {
		t.Fatalf("wrong holder: %v, holders %+v", err, res.Holders)
	}
	if want := fmt.Sprintf("lock %q is no longer held by that holder; nothing was changed", name); inspect.ErrorOf(err).Message != want {
		t.Errorf("conflict message %q, want %q", inspect.ErrorOf(err).Message, want)
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
	// Every listener hears of the broken hold once, with the request's
	// context; the refused attempts broke nothing.
	for _, l := range []*heard{first, second} {
		if got := l.got(); !slices.Equal(got, []string{name + " " + holder}) {
			t.Errorf("listener heard %v, want the one broken hold", got)
		}
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
	// Newest first; each attempt that got as far as Redis wrote its
	// intent before the outcome, and the outcome names it.
	want := []string{inspect.OutcomeOK, inspect.OutcomeIntent, inspect.OutcomeConflict, inspect.OutcomeIntent, inspect.OutcomeInvalid}
	if !slices.Equal(outcomes, want) {
		t.Fatalf("outcomes %v, want %v", outcomes, want)
	}
	if recs[0].Intent != recs[1].ID || recs[2].Intent != recs[3].ID {
		t.Errorf("outcomes do not name their intents: %+v", recs[:4])
	}
}

// A change whose intent cannot be recorded is not made; a name outside
// the console's scope is missing, whatever the action.
func TestUnrecordedOrOutOfScopeChangeNotMade(t *testing.T) {
	rdb, prefix, insp, audit := testTrail(t)
	ctx := t.Context()
	svc := New(Config{Inspector: insp, Audit: audit, InScope: func(n string) bool { return strings.HasPrefix(n, prefix+"in:") }})
	actor := Actor{Role: "admin"}
	for _, name := range []string{prefix + "in:stuck", prefix + "out:stuck"} {
		rdb.HSet(ctx, name, uuid+":7", 1)
		rdb.PExpire(ctx, name, time.Minute)
	}
	_, err := svc.ForceUnlock(ctx, actor, ForceUnlock{Name: prefix + "out:stuck", Holder: uuid + ":7", Reason: "x"})
	if inspect.CodeOf(err) != inspect.CodeNotFound || rdb.Exists(ctx, prefix+"out:stuck").Val() != 1 {
		t.Fatalf("outside the scope: %v", err)
	}
	rdb.Set(ctx, audit.Key(), "not a stream", 0) // every append now fails
	_, err = svc.ForceUnlock(ctx, actor, ForceUnlock{Name: prefix + "in:stuck", Holder: uuid + ":7", Reason: "x"})
	if !errors.Is(err, ErrAuditUnavailable) || inspect.CodeOf(err) != inspect.CodeUnavailable || rdb.Exists(ctx, prefix+"in:stuck").Val() != 1 {
		t.Fatalf("with the trail unwritable: %v; the lock must stay", err)
	}
	t.Cleanup(func() { rdb.Del(context.Background(), prefix+"in:stuck", prefix+"out:stuck") })
}

// A release-all tells the listeners of each hold it broke, not of the
// ones it found gone.
func TestReleaseAllTellsListeners(t *testing.T) {
	rdb, prefix, insp, audit := testTrail(t)
	ctx := t.Context()
	held, gone := prefix+"held", prefix+"gone"
	rdb.HSet(ctx, held, uuid+":1", 1)
	rdb.PExpire(ctx, held, time.Minute)
	t.Cleanup(func() { rdb.Del(context.Background(), held) })
	live := &fakeLive{holders: map[string][]inspect.Hold{uuid: {
		{Lock: held, Kind: inspect.KindReentrant, Holder: uuid + ":1", What: "holds", Count: 1},
		{Lock: gone, Kind: inspect.KindReentrant, Holder: uuid + ":2", What: "holds", Count: 1},
	}}}
	l := &heard{}
	svc := New(Config{Inspector: insp, Audit: audit, Live: live, Listeners: []Listener{l}})
	out, err := svc.ReleaseAll(ctx, Actor{Role: "admin"}, ReleaseAll{Client: uuid, Reason: "crashed"})
	if err != nil || len(out) != 2 {
		t.Fatalf("release-all: %+v, %v", out, err)
	}
	if got := l.got(); !slices.Equal(got, []string{held + " " + uuid + ":1"}) {
		t.Errorf("listener heard %v, want the one hold released", got)
	}
}

func TestCheckEdit(t *testing.T) {
	for _, c := range []struct {
		rate, interval float64
		field          string
	}{{0, 1, "rate"}, {1.5, 1, "rate"}, {1 << 54, 1, "rate"}, {1, 0, "interval_ms"}, {1, 1e9, "interval_ms"}, {5, 2, ""}} {
		e, err := CheckEdit(c.rate, c.interval)
		switch {
		case c.field == "" && (err != nil || e.Rate != 5 || e.IntervalMS != 2):
			t.Errorf("%v/%v: %+v %v", c.rate, c.interval, e, err)
		case c.field != "" && (inspect.CodeOf(err) != inspect.CodeInvalid || inspect.ErrorOf(err).Field != c.field):
			t.Errorf("%v/%v: %v, want a %s error", c.rate, c.interval, err, c.field)
		}
	}
}

package inspect

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/redistest"
)

func TestDeadlineLockClassifiedAndForceUnlockedByValue(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := t.Context()
	p := redistest.Prefix(t)
	insp := New(redistest.UniversalFor(t, rdb), &Options{Patterns: ObjectPatterns{DeadlineLocks: []string{p + "dl:*"}}})
	name, junk := p+"dl:job", p+"dl:cache"
	deadline := time.Now().Add(-time.Second).UnixMilli()
	seen := strconv.FormatInt(deadline, 10)
	rdb.Set(ctx, name, seen, 0)
	rdb.Set(ctx, junk, "not a deadline", 0)
	t.Cleanup(func() { rdb.Del(ctx, name, junk) })

	d, err := discover(ctx, insp, p+"*")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Locks) != 1 || d.Locks[0].Name != name || d.Locks[0].Kind != KindDeadlineLock ||
		d.Locks[0].Deadline.UnixMilli() != deadline || d.Locks[0].Holders[0].ID != seen || d.Locks[0].PTTL >= 0 {
		t.Fatalf("discovered %+v", d.Locks)
	}
	if _, err := insp.GetLock(ctx, junk); !errors.Is(err, store.ErrWrongKind) {
		t.Fatalf("a non-deadline value under the pattern: %v", err)
	}

	// A client takes it over (GETSET of a new deadline) after the admin
	// looked: the force-unlock of the old value changes nothing.
	rdb.Set(ctx, name, strconv.FormatInt(deadline+60_000, 10), 0)
	if err := insp.ForceUnlock(ctx, name, seen); !errors.Is(err, ErrHolderChanged) {
		t.Fatalf("stale value: %v", err)
	}
	if rdb.Exists(ctx, name).Val() != 1 {
		t.Fatal("taken-over lock deleted")
	}
	cur, err := insp.GetLock(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := insp.ForceUnlock(ctx, name, cur.Holders[0].ID); err != nil {
		t.Fatal(err)
	}
	if rdb.Exists(ctx, name).Val() != 0 {
		t.Fatal("not deleted")
	}
	if err := insp.ForceUnlock(ctx, name, seen); !errors.Is(err, ErrNotFound) {
		t.Fatalf("gone: %v", err)
	}
}

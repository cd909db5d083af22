package store

import (
	"errors"
	"maps"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// A handle's last level goes with one HDEL of its field, its hold record
// and the queued mark (lock_release.lua's "last"). When the lock is
// another holder's by then and waiters queue for it, that HDEL takes the
// queued mark of that hold: the release puts it back and answers "not
// held", so the other holder's release still hands the lock to its waiter.
// Without the mark put back, that release deleted the lock with the waiter
// still queued, which then waited for a message nobody sent.
func TestLockLastLevelOfALostHoldLeavesTheNextHoldAlone(t *testing.T) {
	c, rdb := lockTestClient(t)
	name := redistest.Prefix(t) + "lock"
	ctx := redistest.Context(t, 30*time.Second)
	lost := c.NewLock(name, nil)
	if err := lost.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	// Its hold ends without its release (a force-unlock, as the console's
	// lock_force_release does), and another holder takes the lock, with a
	// waiter behind it.
	rdb.Del(ctx, name)
	other := New(rdb, nil).NewLock(name, nil)
	if err := other.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	waiter := New(rdb, nil).NewLock(name, &LockOptions{RetryInterval: time.Minute})
	got := lockAsync(ctx, waiter)
	queuedEntries(t, ctx, rdb, name, 1)
	before := rdb.HGetAll(ctx, name).Val()
	if before[wire.QueuedField] != "1" {
		t.Fatalf("lock hash with a waiter queued = %v, want the queued mark", before)
	}
	pttl := rdb.PTTL(ctx, name).Val()

	if err := lost.Unlock(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("Unlock of a hold that ended = %v, want ErrNotHeld", err)
	}
	if after := rdb.HGetAll(ctx, name).Val(); !maps.Equal(after, before) {
		t.Fatalf("the lost hold's Unlock changed the lock: %v -> %v", before, after)
	}
	if after := rdb.PTTL(ctx, name).Val(); after > pttl || after <= 0 {
		t.Fatalf("the lost hold's Unlock changed the lease: %v -> %v", pttl, after)
	}
	releaseTo(t, ctx, other, got)
	heldBySole(t, rdb, name, waiter.HolderID())
	if err := waiter.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// The last level of a handle whose holder field counts more levels than
// the handle took (a re-entry Redis ran whose reply was lost: the caller
// was told it failed) releases the lock: the levels nobody counts go with
// it rather than keep the lock held by nobody until its lease runs out.
// A handle that shares its holder field (an Owner given) releases one
// level at a time instead, as Redisson does.
func TestLockLastLevelTakesLevelsNobodyCounts(t *testing.T) {
	c, rdb := lockTestClient(t)
	name := redistest.Prefix(t) + "lock"
	ctx := redistest.Context(t, 30*time.Second)
	l := c.NewLock(name, nil)
	if err := l.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	rdb.HIncrBy(ctx, name, l.HolderID(), 1) // the level whose reply was lost
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, name).Val(); n != 0 {
		t.Fatalf("lock after the handle's last Unlock: %v, want gone", rdb.HGetAll(ctx, name).Val())
	}

	shared := c.NewLock(name, &LockOptions{Owner: "worker-1"})
	if err := shared.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	rdb.HIncrBy(ctx, name, shared.HolderID(), 1) // another handle's level
	if err := shared.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rdb.HGet(ctx, name, shared.HolderID()).Val(); n != "1" {
		t.Fatalf("count after one Unlock of a shared holder field = %q, want 1 (the other handle's level)", n)
	}
	if err := shared.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// lock_acquire and lock_release build the lock's channels from its keys
// (luascripts/lib/channels.lua) rather than receive them: the names must
// be the ones wire gives the subscribers, for every shape of name
// (braces, a tag of its own, a name that holds "queue:", unicode).
func TestLockScriptChannelsAreWires(t *testing.T) {
	lib, err := os.ReadFile("../luascripts/lib/channels.lua")
	if err != nil {
		t.Fatal(err)
	}
	src := "local lock, queue = KEYS[1], KEYS[2]\n" + string(lib) + "\nreturn {unlock_channel(), wake_channel(), unlock_message}"
	rdb := redistest.Client(t)
	for _, name := range []string{"orders:42", "{orders}:42", "a{b}c", "x}y{", "{}", "{a:queue:b}queue:", "queue:", "锁 42", "lw:{x}:queue:y"} {
		got, err := rdb.Eval(t.Context(), src, []string{name, wire.LockQueueKey(name)}).StringSlice()
		if err != nil {
			t.Fatal(name, err)
		}
		want := []string{wire.UnlockChannel(name), wire.LockWakeChannel(name), wire.UnlockMessage}
		if !slices.Equal(got, want) {
			t.Errorf("channels of %q built in Lua = %q, want %q", name, got, want)
		}
	}
}

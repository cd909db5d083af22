package store

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// registryClient is a Client whose loop beats only once on its own (an
// hour's period), so the test drives beats and flushes itself.
func registryClient(t *testing.T, rdb redis.UniversalClient, opts Options) *Client {
	t.Helper()
	opts.Beat = time.Hour
	c := New(rdb, &opts)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func readRecord(t *testing.T, rdb redis.UniversalClient, id string) (wire.ClientRecord, bool) {
	t.Helper()
	v, err := rdb.HGet(t.Context(), wire.ClientsKey, id).Result()
	if err == redis.Nil {
		return wire.ClientRecord{}, false
	}
	if err != nil {
		t.Fatal(err)
	}
	var rec wire.ClientRecord
	if err := json.Unmarshal([]byte(v), &rec); err != nil {
		t.Fatalf("record %q: %v", v, err)
	}
	return rec, true
}

func TestRegistryRecordAndClose(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := t.Context()
	c := registryClient(t, rdb, Options{App: "orders-api", Version: "v1.4.2"})
	c.reg.beat(ctx)
	rec, ok := readRecord(t, rdb, c.ID())
	if !ok {
		t.Fatal("no record after a beat")
	}
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	if rec.App != "orders-api" || rec.Version != "v1.4.2" || rec.PID != os.Getpid() || rec.Host != host ||
		rec.BeatMS != time.Hour.Milliseconds() || rec.StartedMS <= 0 {
		t.Fatalf("record = %+v", rec)
	}
	if d := now.UnixMilli() - rec.HeartbeatMS; d < 0 || rec.HeartbeatMS <= 0 {
		t.Fatalf("heartbeat %d is not Redis time (now %d)", rec.HeartbeatMS, now.UnixMilli())
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := readRecord(t, rdb, c.ID()); ok {
		t.Fatal("record still there after Close")
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestRegistryNilOptionsAndOptOut(t *testing.T) {
	rdb := redistest.Client(t)
	c := New(rdb, nil)
	t.Cleanup(func() { _ = c.Close() })
	c.reg.beat(t.Context())
	rec, ok := readRecord(t, rdb, c.ID())
	if !ok || rec.App != filepath.Base(os.Args[0]) || rec.BeatMS != DefaultBeat.Milliseconds() {
		t.Fatalf("nil options: record %+v, %v", rec, ok)
	}

	off := New(rdb, &Options{NoRegistry: true})
	if off.reg != nil {
		t.Fatal("NoRegistry client has a registry")
	}
	off.NewLock(redistest.Prefix(t)+"x", nil) // announce on a nil registry is a no-op
	if err := off.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := readRecord(t, rdb, off.ID()); ok {
		t.Fatal("NoRegistry client registered")
	}
}

func TestRegistryAnnouncesNames(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := t.Context()
	name := redistest.Prefix(t) + "orders:7"
	t.Cleanup(func() { rdb.ZRem(ctx, wire.ClientNamesKey, name) })
	c := registryClient(t, rdb, Options{NoBatching: true})
	// The Client's first beat runs on its own goroutine: once its record is
	// written, the next beat is an hour away. A first beat delayed past the
	// TryLock below (a loaded machine) would re-announce the name there.
	redistest.Eventually(t, "the client's first beat", func() bool {
		_, ok := readRecord(t, rdb, c.ID())
		return ok
	})
	l := c.NewLock(name, nil)
	c.reg.flushNames(ctx)
	if _, err := rdb.ZScore(ctx, wire.ClientNamesKey, name).Result(); err != nil {
		t.Fatalf("first use not announced: %v", err)
	}

	// A later use is announced again with the next beat, not at once.
	if err := rdb.ZRem(ctx, wire.ClientNamesKey, name).Err(); err != nil {
		t.Fatal(err)
	}
	if err := l.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	c.reg.flushNames(ctx)
	if n, _ := rdb.ZScore(ctx, wire.ClientNamesKey, name).Result(); n != 0 {
		t.Fatal("a known name was announced outside a beat")
	}
	c.reg.beat(ctx)
	if _, err := rdb.ZScore(ctx, wire.ClientNamesKey, name).Result(); err != nil {
		t.Fatalf("used name not re-announced by the beat: %v", err)
	}
	// Unused since that beat: the next one leaves it alone.
	rdb.ZRem(ctx, wire.ClientNamesKey, name)
	c.reg.beat(ctx)
	if _, err := rdb.ZScore(ctx, wire.ClientNamesKey, name).Result(); err != redis.Nil {
		t.Fatalf("unused name re-announced: %v", err)
	}
	_ = l.Unlock(ctx)
}

func TestRegistryBeatSweepsStaleRecordsAndNames(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := t.Context()
	p := redistest.Prefix(t)
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	stale, _ := json.Marshal(wire.ClientRecord{App: "gone", HeartbeatMS: now.Add(-2 * time.Hour).UnixMilli(), BeatMS: 5000})
	fresh, _ := json.Marshal(wire.ClientRecord{App: "alive", HeartbeatMS: now.Add(-30 * time.Minute).UnixMilli(), BeatMS: 5000})
	staleID, freshID, junkID := p+"stale", p+"fresh", p+"junk"
	rdb.HSet(ctx, wire.ClientsKey, staleID, stale, freshID, fresh, junkID, "not json")
	oldName, newName := p+"old", p+"new"
	rdb.ZAdd(ctx, wire.ClientNamesKey, redis.Z{Score: float64(now.Add(-11 * time.Minute).UnixMilli()), Member: oldName},
		redis.Z{Score: float64(now.Add(-time.Minute).UnixMilli()), Member: newName})
	t.Cleanup(func() {
		rdb.HDel(ctx, wire.ClientsKey, staleID, freshID, junkID)
		rdb.ZRem(ctx, wire.ClientNamesKey, oldName, newName)
	})

	c := registryClient(t, rdb, Options{})
	// The sweep walks the hash by HSCAN cursor; a small hash is one page,
	// a few beats cover any leftover cursor of the loop's own beat.
	for range 3 {
		c.reg.beat(ctx)
	}
	for id, want := range map[string]bool{staleID: false, freshID: true, junkID: false} {
		if got := rdb.HExists(ctx, wire.ClientsKey, id).Val(); got != want {
			t.Errorf("record %s present = %v, want %v", id, got, want)
		}
	}
	if rdb.ZScore(ctx, wire.ClientNamesKey, oldName).Err() != redis.Nil {
		t.Error("name older than ten minutes kept")
	}
	if rdb.ZScore(ctx, wire.ClientNamesKey, newName).Err() != nil {
		t.Error("recent name trimmed")
	}
}

// Token locks and counters are plain strings: they are announced with
// their kind, so the console reads them as such without a pattern (they
// were announced by bare name, which the console read as a hash).
func TestRegistryAnnouncesStringKinds(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := t.Context()
	p := redistest.Prefix(t)
	tokenName, counterName, lockName := p+"tok", p+"hits", p+"lock"
	members := []string{wire.AnnouncedMember(wire.AnnounceTokenLock, tokenName), wire.AnnouncedMember(wire.AnnounceCounter, counterName), lockName}
	t.Cleanup(func() {
		for _, m := range members {
			rdb.ZRem(context.WithoutCancel(ctx), wire.ClientNamesKey, m)
		}
	})
	c := registryClient(t, rdb, Options{NoBatching: true})
	tok := c.NewTokenLock(tokenName, nil)
	hits := c.NewCounter(counterName, &LimiterOptions{Limit: 10, Window: time.Minute})
	spin := c.NewSpinLock(p+"spin", nil)
	members = append(members, p+"spin")
	c.NewLock(lockName, nil)
	c.reg.flushNames(ctx)
	for _, m := range members {
		if err := rdb.ZScore(ctx, wire.ClientNamesKey, m).Err(); err != nil {
			t.Errorf("member %q not announced: %v", m, err)
		}
	}
	for i, want := range [][2]string{{tokenName, wire.AnnounceTokenLock}, {counterName, wire.AnnounceCounter}, {lockName, ""}} {
		if n, k := wire.ParseAnnounced(members[i]); n != want[0] || k != want[1] {
			t.Errorf("wire.ParseAnnounced(%q) = %q, %q; want %q, %q", members[i], n, k, want[0], want[1])
		}
	}
	// A bare name that merely starts with NUL stays a name.
	if n, k := wire.ParseAnnounced("\x00other\x00x"); n != "\x00other\x00x" || k != "" {
		t.Errorf("unknown kind parsed as %q, %q", n, k)
	}
	// A beat re-announces a used name by the same member (kind and all).
	// Their calls bypass the batcher, and before they did not count as
	// uses: a token lock held and refreshed for longer than the zset's
	// retention dropped out of the console that started after it.
	rdb.ZRem(ctx, wire.ClientNamesKey, members[0], members[1], members[3])
	if err := tok.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tok.Unlock(context.WithoutCancel(ctx)) })
	if _, err := hits.TryAcquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := spin.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { spin.Unlock(context.WithoutCancel(ctx)) })
	c.reg.beat(ctx)
	for _, m := range []string{members[0], members[1], members[3]} {
		if err := rdb.ZScore(ctx, wire.ClientNamesKey, m).Err(); err != nil {
			t.Errorf("member %q not re-announced by the beat after a use: %v", m, err)
		}
	}
}

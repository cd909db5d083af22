package inspect

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// collectUntil reads events until one about each of the marker names has
// arrived and returns the others in order. Markers go one by classic and
// one by sharded pub/sub, each after the messages under test on its
// connection, so once both are in, every earlier copy has been seen: the
// check for "exactly once" needs no waiting.
func collectUntil(t *testing.T, s *EventStream, markers ...string) []Event {
	t.Helper()
	want := map[string]bool{}
	for _, m := range markers {
		want[m] = true
	}
	var out []Event
	for len(want) > 0 {
		ev := eventsWait(t, s, 10*time.Second)
		if want[ev.Name] {
			delete(want, ev.Name)
			continue
		}
		out = append(out, ev)
	}
	return out
}

// On a Cluster of Redis 7 the console hears Redisson's SPUBLISH (sharded)
// unlocks, hears lockwarden's double publish once, and follows the locks it
// is told about onto the master of each one's slot.
func TestEventsShardedOnCluster(t *testing.T) {
	c := redistest.StartCluster(t, nil)
	cc := redistest.NewClusterClient(t, c)
	ctx := redistest.Context(t, time.Minute)
	in := New(cc, nil)
	s, err := in.SubscribeEvents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if !s.Sharded() {
		t.Fatal("stream on a Redis 7 Cluster does not listen with sharded pub/sub")
	}

	// Names on every master: plain names hash anywhere, a tagged one
	// keeps its tag.
	var locks []LockInfo
	for i := range 12 {
		name := fmt.Sprintf("ev-shard-%d", i)
		if i == 11 {
			name = "{ev-tag}:orders"
		}
		locks = append(locks, LockInfo{Name: name, Kind: KindReentrant, Channel: wire.UnlockChannel(name)})
	}
	markC := LockInfo{Name: "ev-mark-classic", Kind: KindReentrant, Channel: wire.UnlockChannel("ev-mark-classic")}
	// A sharded marker per master: each master's messages come on their
	// own connection.
	var markS []LockInfo
	masters := map[string]bool{}
	for i := 0; len(masters) < len(c.Masters); i++ {
		name := fmt.Sprintf("ev-mark-sharded-%d", i)
		node, err := cc.MasterForKey(ctx, wire.UnlockChannel(name))
		if err != nil {
			t.Fatal(err)
		}
		if !masters[node.Options().Addr] {
			masters[node.Options().Addr] = true
			markS = append(markS, LockInfo{Name: name, Kind: KindReentrant, Channel: wire.UnlockChannel(name)})
		}
	}
	fair := LockInfo{Name: "ev-fair", Kind: KindFairLock, Channel: wire.UnlockChannel("ev-fair"),
		Waiters: []Waiter{{ID: "6f0b3c1e-2d4a-4b8e-9c1f-0a1b2c3d4e5f:7", Channel: wire.UnlockChannel("ev-fair") + ":6f0b3c1e-2d4a-4b8e-9c1f-0a1b2c3d4e5f:7"}}}
	all := append(append(append([]LockInfo{}, locks...), markC, fair), markS...)
	if err := s.Watch(ctx, all); err != nil {
		t.Fatal(err)
	}
	// Every channel has exactly one sharded subscriber, on its own master.
	for _, l := range all {
		if n := shardNumSub(t, cc, l.Channel); n != 1 {
			t.Fatalf("PUBSUB SHARDNUMSUB %s = %d on its master; want 1", l.Channel, n)
		}
	}

	send := func(ch string, classic, sharded bool) {
		t.Helper()
		if classic {
			if err := cc.Publish(ctx, ch, "0").Err(); err != nil {
				t.Fatal(err)
			}
		}
		if sharded {
			if err := cc.SPublish(ctx, ch, "0").Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	marks := func() []Event {
		names := []string{markC.Name}
		send(markC.Channel, true, false)
		for _, m := range markS {
			send(m.Channel, false, true)
			names = append(names, m.Name)
		}
		got := collectUntil(t, s, names...)
		// Masters' connections interleave: compare in name order.
		slices.SortFunc(got, func(a, b Event) int { return strings.Compare(a.Name, b.Name) })
		return got
	}

	t.Run("SPUBLISH only, as Redisson does", func(t *testing.T) {
		for _, l := range locks {
			send(l.Channel, false, true)
		}
		got := marks()
		if len(got) != len(locks) {
			t.Fatalf("got %d events for %d sharded unlocks: %+v", len(got), len(locks), got)
		}
		want := make([]string, len(locks))
		for i, l := range locks {
			want[i] = l.Name
		}
		slices.Sort(want)
		for i, ev := range got {
			if ev.Name != want[i] || ev.Type != EventUnlock {
				t.Errorf("event %d = %+v, want unlock of %s", i, ev, want[i])
			}
		}
	})
	t.Run("both ways is one event, twice is two", func(t *testing.T) {
		l := locks[3]
		send(l.Channel, true, true)
		if got := marks(); len(got) != 1 || got[0].Name != l.Name {
			t.Fatalf("PUBLISH+SPUBLISH of one release gave %+v, want one event", got)
		}
		send(l.Channel, true, true)
		send(l.Channel, true, true)
		if got := marks(); len(got) != 2 {
			t.Fatalf("two releases published both ways gave %d events: %+v", len(got), got)
		}
	})
	t.Run("fair lock waiter channel", func(t *testing.T) {
		send(fair.Waiters[0].Channel, false, true)
		got := marks()
		if len(got) != 1 || got[0].Name != fair.Name || got[0].Waiter != fair.Waiters[0].ID {
			t.Fatalf("waiter's sharded wake-up gave %+v", got)
		}
	})
	t.Run("Watch drops what is no longer known", func(t *testing.T) {
		if err := s.Watch(ctx, append([]LockInfo{markC}, markS...)); err != nil {
			t.Fatal(err)
		}
		if n := shardNumSub(t, cc, locks[0].Channel); n != 0 {
			t.Fatalf("forgotten lock still has %d sharded subscribers", n)
		}
		if got := marks(); len(got) != 0 {
			t.Fatalf("unexpected events %+v", got)
		}
	})
}

// shardNumSub asks the master of ch's slot (go-redis sends PUBSUB
// SHARDNUMSUB to any node).
func shardNumSub(t *testing.T, cc *redis.ClusterClient, ch string) int64 {
	t.Helper()
	node, err := cc.MasterForKey(t.Context(), ch)
	if err != nil {
		t.Fatal(err)
	}
	n, err := node.PubSubShardNumSub(t.Context(), ch).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n[ch]
}

// A single node has no sharded pub/sub to follow: Watch is a no-op.
func TestEventsWatchSingleNode(t *testing.T) {
	s, err := New(redistest.Client(t), nil).SubscribeEvents(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if redistest.SharedCluster() == nil && s.Sharded() {
		t.Fatal("single node stream says it is sharded")
	}
	if err := s.Watch(t.Context(), []LockInfo{{Name: "x", Channel: wire.UnlockChannel("x")}}); err != nil {
		t.Fatal(err)
	}
}

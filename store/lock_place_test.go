package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store/internal/wire"
)

// placeWindow is lock_acquire.lua's follow_us: a Client's waiter queued
// less than this after another of its waiters stands right behind it.
const placeWindow = 3 * time.Millisecond

// A Client's waiters stand together in the queue (lock_acquire.lua's
// place): a token "<group>.<rest>" queued for the first time goes right
// behind the newest entry of its group among the 32 newest scored less than
// 3 ms before its arrival, ahead of other groups' entries behind that one;
// with no such
// entry, or a token of no group, it goes at its arrival. Entries scored in
// the future stand for "within the window" whatever the machine's timing.
func TestLockQueuePlacesClientWaitersTogether(t *testing.T) {
	ctx, rdb, name, holder := heldLock(t)
	queue := wire.LockQueueKey(name)
	now := rdb.Time(ctx).Val().UnixMicro()
	soon, long := float64(now+10_000_000), float64(now-60_000_000)
	if err := rdb.ZAdd(ctx, queue,
		redis.Z{Score: long, Member: "g3.a"}, redis.Z{Score: long + 5, Member: "g2.c"},
		redis.Z{Score: soon, Member: "g1.a"}, redis.Z{Score: soon + 5, Member: "g2.b"},
	).Err(); err != nil {
		t.Fatal(err)
	}
	l := holder.c.NewLock(name, nil)
	for _, token := range []string{"g1.c", "g3.b", "plain", "g2.d", "g1x.e"} {
		if _, ok, err := l.tryAcquire(ctx, &waitTurn{token: token}); err != nil || ok {
			t.Fatalf("%s queued: ok=%v err=%v, want a failed attempt", token, ok, err)
		}
	}
	// A refresh keeps its place.
	if _, ok, err := l.tryAcquire(ctx, &waitTurn{token: "g1.c", queued: true}); err != nil || ok {
		t.Fatalf("refresh: ok=%v err=%v", ok, err)
	}
	got := rdb.ZRangeWithScores(ctx, queue, 0, -1).Val()
	var order []string
	score := map[string]float64{}
	for _, z := range got {
		order = append(order, z.Member.(string))
		score[z.Member.(string)] = z.Score
	}
	// g3.b: its group's entry is a minute old. plain: no group. g1x.e: "g1x"
	// is not "g1". g1.c follows g1.a; g2.d follows g2.b, the newest of g2.
	want := []string{"g3.a", "g2.c", "g3.b", "plain", "g1x.e", "g1.a", "g1.c", "g2.b", "g2.d"}
	if len(order) != len(want) {
		t.Fatalf("queue %v, want %v", order, want)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("queue %v, want %v", order, want)
		}
	}
	if score["g1.c"] != soon+1 || score["g2.d"] != soon+6 {
		t.Errorf("followers scored %v and %v, want one microsecond behind %v and %v", score["g1.c"], score["g2.d"], soon, soon+5)
	}
	if d := score["g3.b"] - float64(now); d < 0 || d > 30_000_000 {
		t.Errorf("g3.b scored %v µs from the test's TIME, want its arrival", d)
	}
}

// The newest entry of a group is found behind as many entries of other
// groups as a Client has waiters: with two Clients of 16 goroutines, the
// other's 16 newer entries must not hide it.
func TestLockQueuePlacesBehindManyNewerEntries(t *testing.T) {
	ctx, rdb, name, holder := heldLock(t)
	queue := wire.LockQueueKey(name)
	soon := float64(rdb.Time(ctx).Val().UnixMicro() + 10_000_000)
	zs := []redis.Z{{Score: soon, Member: "g4.a"}}
	for i := range 16 {
		zs = append(zs, redis.Z{Score: soon + 10 + float64(i), Member: fmt.Sprintf("g6.%d", i)})
	}
	if err := rdb.ZAdd(ctx, queue, zs...).Err(); err != nil {
		t.Fatal(err)
	}
	l := holder.c.NewLock(name, nil)
	if _, ok, err := l.tryAcquire(ctx, &waitTurn{token: "g4.b"}); err != nil || ok {
		t.Fatalf("queued: ok=%v err=%v, want a failed attempt", ok, err)
	}
	if got := rdb.ZScore(ctx, queue, "g4.b").Val(); got != soon+1 {
		t.Errorf("g4.b scored %v, want %v: right behind g4.a, ahead of 16 newer entries of g6", got, soon+1)
	}
}

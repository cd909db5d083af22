package inspect

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/redistest"
)

func TestAuditAppendRecentNewestFirst(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := context.Background()
	a := New(rdb, nil).Audit("lw:{audit}:"+redistest.Prefix(t), 0)
	t.Cleanup(func() { rdb.Del(context.Background(), a.Key()) })

	before := time.Now().Add(-time.Minute)
	for i := range 3 {
		_, err := a.Append(ctx, AuditRecord{Role: "admin", Fingerprint: "ab12cd34", Remote: "127.0.0.1",
			Action: "modify", Target: "rl:" + strconv.Itoa(i), Before: "rate=1", After: "rate=2",
			Outcome: OutcomeOK, Reason: "load test", RequestID: "r" + strconv.Itoa(i)})
		if err != nil {
			t.Fatal(err)
		}
	}
	recs, err := a.Recent(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("got %d records, want 3", len(recs))
	}
	for i, r := range recs {
		want := "rl:" + strconv.Itoa(2-i)
		if r.Target != want {
			t.Errorf("record %d target %q, want %q (newest first)", i, r.Target, want)
		}
		if r.Role != "admin" || r.Fingerprint != "ab12cd34" || r.Before != "rate=1" || r.After != "rate=2" ||
			r.Outcome != OutcomeOK || r.Reason != "load test" || r.Remote != "127.0.0.1" || r.Action != "modify" {
			t.Errorf("record %d = %+v", i, r)
		}
		if r.Time.Before(before) || r.Time.After(time.Now().Add(time.Minute)) {
			t.Errorf("record %d time %v not near now", i, r.Time)
		}
	}
	if recs, _ := a.Recent(ctx, 2); len(recs) != 2 || recs[0].Target != "rl:2" {
		t.Errorf("Recent(2) = %+v", recs)
	}
}

func TestAuditCappedAndClipped(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := context.Background()
	a := New(rdb, nil).Audit("lw:{audit}:"+redistest.Prefix(t), 100)
	t.Cleanup(func() { rdb.Del(context.Background(), a.Key()) })
	huge := strings.Repeat("é", 10000)
	for range 1000 {
		if _, err := a.Append(ctx, AuditRecord{Action: "sign-in", Outcome: OutcomeDenied, Target: huge}); err != nil {
			t.Fatal(err)
		}
	}
	n, err := rdb.XLen(ctx, a.Key()).Result()
	if err != nil {
		t.Fatal(err)
	}
	// MAXLEN ~ trims whole radix-tree nodes (100 entries by default), so a
	// few hundred at most remain; without trimming there would be 1,000.
	if n < 100 || n > 300 {
		t.Errorf("stream holds %d entries, want about 100", n)
	}
	recs, err := a.Recent(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if l := len(recs[0].Target); l > maxAuditField+len("…") {
		t.Errorf("target stored with %d bytes, want at most %d", l, maxAuditField)
	}
	if !strings.HasSuffix(recs[0].Target, "…") || !strings.HasPrefix(recs[0].Target, "éé") {
		t.Errorf("clipped target is not a valid prefix: %q", recs[0].Target[:20])
	}
}

func TestAuditWrongType(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := context.Background()
	key := redistest.Prefix(t) + "notastream"
	rdb.Set(ctx, key, "x", time.Minute)
	a := New(rdb, nil).Audit(key, 0)
	if _, err := a.Recent(ctx, 5); !errors.Is(err, store.ErrWrongKind) {
		t.Errorf("Recent on a string: %v, want store.ErrWrongKind", err)
	}
	if recs, err := New(rdb, nil).Audit(redistest.Prefix(t)+"none", 0).Recent(ctx, 5); err != nil || len(recs) != 0 {
		t.Errorf("Recent on a missing stream: %v %v", recs, err)
	}
}

// A trail kept by age trims what is older than its retention and nothing
// younger, however many records follow: a flood cannot push a change out.
// The old records are written with IDs from the past, as Redis' clock
// would have stamped them then.
func TestAuditTrailKeptByAge(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := context.Background()
	a := New(rdb, nil).AuditTrail("lw:{audit}:"+redistest.Prefix(t), time.Hour)
	t.Cleanup(func() { rdb.Del(context.Background(), a.Key()) })
	now := redistest.NowMS(t, rdb)
	// Enough old entries to fill whole stream nodes, which is what
	// MINID ~ removes.
	for i := range 300 {
		id := strconv.FormatInt(now-2*time.Hour.Milliseconds()+int64(i), 10) + "-0"
		rdb.XAdd(ctx, &redis.XAddArgs{Stream: a.Key(), ID: id, Values: []any{"action", "old"}})
	}
	first, err := a.Append(ctx, AuditRecord{Action: "force-unlock", Target: "orders", Outcome: OutcomeIntent})
	if err != nil {
		t.Fatal(err)
	}
	for range 300 {
		if _, err := a.Append(ctx, AuditRecord{Action: "modify", Outcome: OutcomeOK, Intent: first}); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := a.Recent(ctx, MaxAuditRead)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 301 {
		t.Fatalf("%d records kept, want the 301 younger than an hour", len(recs))
	}
	if last := recs[len(recs)-1]; last.ID != first || last.Outcome != OutcomeIntent || recs[0].Intent != first {
		t.Fatalf("oldest kept %+v, newest %+v", last, recs[0])
	}
}

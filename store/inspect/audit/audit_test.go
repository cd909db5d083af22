package audit

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
	a := Capped(redistest.UniversalFor(t, rdb), "lw:{audit}:"+redistest.Prefix(t), 0)
	t.Cleanup(func() { rdb.Del(context.Background(), a.Key()) })

	before := time.Now().Add(-time.Minute)
	for i := range 3 {
		_, err := a.Append(ctx, Record{Role: "admin", Fingerprint: "ab12cd34", Remote: "127.0.0.1",
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
	a := Capped(redistest.UniversalFor(t, rdb), "lw:{audit}:"+redistest.Prefix(t), 100)
	t.Cleanup(func() { rdb.Del(context.Background(), a.Key()) })
	huge := strings.Repeat("é", 10000)
	for range 1000 {
		if _, err := a.Append(ctx, Record{Action: "sign-in", Outcome: OutcomeDenied, Target: huge}); err != nil {
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
	if l := len(recs[0].Target); l > maxField+len("…") {
		t.Errorf("target stored with %d bytes, want at most %d", l, maxField)
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
	a := Capped(redistest.UniversalFor(t, rdb), key, 0)
	if _, err := a.Recent(ctx, 5); !errors.Is(err, store.ErrWrongKind) {
		t.Errorf("Recent on a string: %v, want store.ErrWrongKind", err)
	}
	if recs, err := Capped(redistest.UniversalFor(t, rdb), redistest.Prefix(t)+"none", 0).Recent(ctx, 5); err != nil || len(recs) != 0 {
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
	a := KeptFor(redistest.UniversalFor(t, rdb), "lw:{audit}:"+redistest.Prefix(t), time.Hour)
	t.Cleanup(func() { rdb.Del(context.Background(), a.Key()) })
	now := redistest.NowMS(t, rdb)
	// Enough old entries to fill whole stream nodes, which is what
	// MINID ~ removes.
	for i := range 300 {
		id := strconv.FormatInt(now-2*time.Hour.Milliseconds()+int64(i), 10) + "-0"
		rdb.XAdd(ctx, &redis.XAddArgs{Stream: a.Key(), ID: id, Values: []any{"action", "old"}})
	}
	first, err := a.Append(ctx, Record{Action: "force-unlock", Target: "orders", Outcome: OutcomeIntent})
	if err != nil {
		t.Fatal(err)
	}
	for range 300 {
		if _, err := a.Append(ctx, Record{Action: "modify", Outcome: OutcomeOK, Intent: first}); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := a.Recent(ctx, MaxRead)
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

// Pages of the trail follow one another with no record twice or missing,
// however many share a millisecond, and a before that is no record's id
// is refused naming the field.
func TestAuditPages(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := context.Background()
	a := Capped(redistest.UniversalFor(t, rdb), "lw:{audit}:"+redistest.Prefix(t), 0)
	t.Cleanup(func() { rdb.Del(context.Background(), a.Key()) })
	const total = 25
	pipe := rdb.Pipeline() // one pipeline: many records share a millisecond
	for i := range total {
		pipe.XAdd(ctx, &redis.XAddArgs{Stream: a.Key(), ID: "*", Values: []any{"target", strconv.Itoa(i)}})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	before, pages := "", 0
	for {
		recs, next, err := a.Page(ctx, before, 10)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, r := range recs {
			got = append(got, r.Target)
		}
		if next == "" {
			break
		}
		if next != recs[len(recs)-1].ID {
			t.Fatalf("next %q is not the page's last id %q", next, recs[len(recs)-1].ID)
		}
		before = next
	}
	if pages != 3 || len(got) != total {
		t.Fatalf("%d pages, %d records %v; want 3 pages of 10, 10 and 5", pages, len(got), got)
	}
	for i, target := range got {
		if target != strconv.Itoa(total-1-i) {
			t.Fatalf("record %d is %s: pages %v are not newest first without gaps", i, target, got)
		}
	}

	// A page of exactly what is left says there is nothing older.
	all, next, err := a.Page(ctx, "", total)
	if err != nil || len(all) != total || next != "" {
		t.Fatalf("Page(\"\", %d) = %d records, next %q, %v", total, len(all), next, err)
	}
	// Before the oldest record, and before 0-0, nothing is left.
	for _, b := range []string{all[total-1].ID, "0-0"} {
		if recs, next, err := a.Page(ctx, b, 10); err != nil || len(recs) != 0 || next != "" {
			t.Errorf("Page(%q) = %v, %q, %v; want nothing", b, recs, next, err)
		}
	}
	// A before between records (one trimmed meanwhile) pages on from there.
	ms, _, _ := strings.Cut(all[0].ID, "-")
	if recs, _, err := a.Page(ctx, ms+"-18446744073709551615", 1); err != nil || len(recs) != 1 || recs[0].ID != all[0].ID {
		t.Errorf("Page before the newest record's millisecond's end = %v, %v", recs, err)
	}
	for _, b := range []string{"x", "1-", "-1", "1-2-3", "+1-0", " 1-0", "1-0 ", "99999999999999999999-0", "1-99999999999999999999", "+", "-"} {
		var ve *store.ValidationError
		if _, _, err := a.Page(ctx, b, 10); !errors.As(err, &ve) || ve.Field != "before" {
			t.Errorf("Page(%q) = %v, want a ValidationError of field before", b, err)
		}
	}
}

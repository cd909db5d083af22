package admin

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// A flood from one address writes its burst, then is held back and
// counted; another address still gets its records written; Flush turns
// what was held back into one record per source.
func TestRefusedLogThrottlesPerSourceAndSummarises(t *testing.T) {
	rdb := redistest.Client(t)
	trail := inspect.New(rdb, nil).Audit("lw:{audit}:"+redistest.Prefix(t), 0)
	t.Cleanup(func() { rdb.Del(context.Background(), trail.Key()) })
	l := NewRefusedLog(trail)
	ctx, now := t.Context(), time.Now()
	for range 500 {
		if err := l.Record(ctx, inspect.AuditRecord{Remote: "192.0.2.1", Action: "post /x", Outcome: inspect.OutcomeDenied}, now); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Record(ctx, inspect.AuditRecord{Remote: "192.0.2.2", Action: "post /y", Outcome: inspect.OutcomeDenied}, now); err != nil {
		t.Fatal(err)
	}
	if w, s := l.Counts(); w != sourceBurst+1 || s != 500-sourceBurst {
		t.Fatalf("written %d, held back %d", w, s)
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	recs, err := trail.Recent(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != sourceBurst+2 || recs[0].Action != "refused-requests" || !strings.HasPrefix(recs[0].Detail, "490 more refused requests from 192.0.2.1") {
		t.Fatalf("%d records, newest %+v", len(recs), recs[0])
	}
	// The source's bucket refills: a second later it may write again.
	if err := l.Record(ctx, inspect.AuditRecord{Remote: "192.0.2.1"}, now.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if w, _ := l.Counts(); w != sourceBurst+3 {
		t.Fatalf("written %d after the refill", w)
	}
}

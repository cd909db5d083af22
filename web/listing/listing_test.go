package listing

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/live"
)

// TestListingCursorSurvivesChanges pages while rows come and go between
// pages: rows present throughout are listed exactly once.
func TestListingCursorSurvivesChanges(t *testing.T) {
	var items []inspect.LockInfo
	for i := range 100 {
		items = append(items, inspect.LockInfo{Name: fmt.Sprintf("l%03d", i), Kind: inspect.KindReentrant,
			PTTL: time.Duration(i%10) * time.Second})
	}
	sn := &live.Snapshot{SampledAt: time.Now()}
	q := Query{Sort: SortLease, Limit: 15}
	seen := map[string]int{}
	for round := 0; ; round++ {
		sn := &live.Snapshot{SampledAt: sn.SampledAt}
		p := pageOf(items, order(sn, "locks", items, q, lockName, lockKind, lockKey(sn, q.Sort)), q)
		for _, l := range p.Rows {
			seen[l.Name]++
		}
		if p.Next == "" {
			break
		}
		k, err := DecodeCursor(p.Next)
		if err != nil {
			t.Fatal(err)
		}
		q.After = k
		// Between pages: one row already sent and one not yet sent vanish,
		// and a new row appears.
		items = slices.DeleteFunc(items, func(l inspect.LockInfo) bool {
			return l.Name == fmt.Sprintf("l%03d", round) || l.Name == fmt.Sprintf("l%03d", 99-round)
		})
		items = append(items, inspect.LockInfo{Name: fmt.Sprintf("new%02d", round), Kind: inspect.KindReentrant})
	}
	for _, l := range items {
		if strings.HasPrefix(l.Name, "l") && seen[l.Name] != 1 {
			t.Errorf("%s (present throughout) listed %d times", l.Name, seen[l.Name])
		}
	}
	for name, c := range seen {
		if c > 1 {
			t.Errorf("%s listed %d times", name, c)
		}
	}
}

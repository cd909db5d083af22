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
		names, next := lockPage(t, sn, items, q)
		for _, n := range names {
			seen[n]++
		}
		if next == nil {
			break
		}
		q.After = next
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

// Names are Redis keys, any bytes: paging one row at a time through names
// that are not UTF-8 lists each exactly once and ends (a cursor carrying
// the name as a JSON string named "a\uFFFD" instead of "a\xff", which
// sorts before it, so every next page was "a\xff" again).
func TestListingCursorOfNamesNotUTF8(t *testing.T) {
	names := []string{"a", "a\xff", "\xc3", "\xc3\xa9", "\xef\xbf\xbd", "\xfe", "\xff", "\xff\xff"}
	var items []inspect.LockInfo
	for _, n := range names {
		items = append(items, inspect.LockInfo{Name: n, Kind: inspect.KindReentrant})
	}
	sn := &live.Snapshot{SampledAt: time.Now()}
	q := Query{Sort: SortName, Limit: 1}
	var got []string
	for range 2 * len(names) {
		names, next := lockPage(t, sn, items, q)
		got = append(got, names...)
		if next == nil {
			break
		}
		q.After = next
	}
	want := slices.Clone(names)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("paged %q, want %q", got, want)
	}
}

// lockPage is the page of items q asks for: its rows' names, and the key
// its next cursor decodes to (nil on the last page).
func lockPage(t *testing.T, sn *live.Snapshot, items []inspect.LockInfo, q Query) ([]string, *Key) {
	t.Helper()
	p := pageOf(items, order(sn, "locks", items, q, lockName, lockKind, lockKey(sn, q.Sort), lockSearch(sn.Registry)), q)
	var names []string
	for _, l := range p.Rows {
		names = append(names, l.Name)
	}
	if p.Next == "" {
		return names, nil
	}
	k, err := DecodeCursor(p.Next)
	if err != nil {
		t.Fatal(err)
	}
	return names, k
}

// Package listing is how the console's lists of locks and limiters are
// filtered, sorted and cut into pages: every page of one tick is cut from
// one order kept on the snapshot (live.Memo), and a cursor names the last
// row sent, so paging through a list that changes between ticks repeats
// and skips nothing. It knows no HTTP; web reads a Query from the request
// and renders the Page. It imports store/inspect, web/live and web/present.
package listing

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/live"
)

// Query is a list request: which rows (Match, Kind), in which order, and
// where the page starts.
type Query struct {
	Match string
	Glob  *inspect.Glob // Match compiled; nil for none
	// Q is a search, any case: part of the name or, for a lock, of who
	// holds or waits for it (Searcher). "" searches nothing.
	Q      string
	Kind   inspect.Kind
	Sort   string
	Desc   bool
	Limit  int
	Cursor string // as given; "" is the first page
	After  *Key   // Cursor decoded
}

// Key places a row in a list's total order: Num, then Str, then Name. A
// cursor is the key of the last row sent, so the next page starts after it
// even when rows were added or removed in between: nothing before it is
// repeated and nothing after it is skipped. Keys are chosen to stay put
// between ticks (a lease sorts by its deadline, an age by the first-seen
// instant), so only a row whose key itself changes can move across it.
type Key struct {
	Num  float64
	Str  string
	Name string
}

func (a Key) compare(b Key) int {
	if c := cmp.Compare(a.Num, b.Num); c != 0 {
		return c
	}
	if c := strings.Compare(a.Str, b.Str); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// cursorJSON is a cursor's text: a Key whose strings travel as bytes
// (base64 in the JSON), since names are Redis keys, any bytes, and a JSON
// string would replace what is not UTF-8, naming another row.
type cursorJSON struct {
	Num  float64 `json:"n,omitempty"`
	Str  []byte  `json:"s,omitempty"`
	Name []byte  `json:"k"`
}

// encodeCursor is the cursor of the page after the row at k.
func encodeCursor(k Key) string {
	b, _ := json.Marshal(cursorJSON{Num: k.Num, Str: []byte(k.Str), Name: []byte(k.Name)})
	return base64.RawURLEncoding.EncodeToString(b)
}

// errCursor is what DecodeCursor says of a string that is no cursor.
var errCursor = errors.New("not a cursor of this list (take next_cursor from a page)")

// DecodeCursor is encodeCursor's key; an error for anything else: only
// the exact text encodeCursor writes decodes, so no two cursors name one
// row and nothing a client crafts reaches the order but a key.
func DecodeCursor(s string) (*Key, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, errCursor
	}
	var c cursorJSON
	if err := json.Unmarshal(b, &c); err != nil || len(c.Name) == 0 {
		return nil, errCursor
	}
	k := Key{Num: c.Num, Str: string(c.Str), Name: string(c.Name)}
	if encodeCursor(k) != s {
		return nil, errCursor
	}
	return &k, nil
}

// Page is one page of a filtered, sorted list.
type Page[T any] struct {
	Rows  []T
	Total int    // rows passing the filters, on every page
	Next  string // cursor of the next page; "" on the last
}

// Keyed is an item's index in its snapshot slice and its sort key.
type Keyed struct {
	I int
	K Key
}

// order filters items and sorts them as q asks. The result depends only on
// the snapshot and q's filters and sort, so it is kept on the snapshot and
// every later page of the same tick is a binary search. A filtered order
// is cut out of the unfiltered one in a single pass, so a new pattern
// costs one linear scan of the names, never a sort: sweeping patterns
// cannot get past the memo.
func order[T any](sn *live.Snapshot, list string, items []T, q Query, name func(*T) string, kind func(*T) inspect.Kind, key func(*T) Key,
	search func(*T, string) bool) []Keyed {
	ck := orderKey{list: list, match: q.Match, q: q.Q, kind: q.Kind, sort: q.Sort, desc: q.Desc}
	memo := sn.Memo()
	if v, ok := memo.Load(ck); ok {
		return v.([]Keyed)
	}
	if q.Match == "" && q.Kind == "" && q.Q == "" {
		ks := make([]Keyed, 0, len(items))
		for i := range items {
			ks = append(ks, Keyed{i, key(&items[i])})
		}
		dir := 1
		if q.Desc {
			dir = -1
		}
		slices.SortFunc(ks, func(a, b Keyed) int { return dir * a.K.compare(b.K) })
		// Unfiltered orders are few (lists × sorts × directions): always
		// kept.
		memo.Keep(ck, ks)
		return ks
	}
	all := order(sn, list, items, Query{Sort: q.Sort, Desc: q.Desc}, name, kind, key, search)
	lq := strings.ToLower(q.Q)
	ks := make([]Keyed, 0, len(all))
	for _, k := range all {
		it := &items[k.I]
		if q.Kind != "" && kind(it) != q.Kind {
			continue
		}
		if q.Glob != nil && !q.Glob.Match(name(it)) {
			continue
		}
		if lq != "" && !search(it, lq) {
			continue
		}
		ks = append(ks, k)
	}
	// Bounded: a snapshot lives one tick, and distinct filters are few
	// unless a client sweeps patterns; past the cap the order is not kept.
	memo.Store(ck, ks)
	return ks
}

// orderKey names one filtered, sorted order of a snapshot's list.
type orderKey struct {
	list, match, q, sort string
	kind                 inspect.Kind
	desc                 bool
}

// pageOf cuts the page q asks for out of a sorted order.
func pageOf[T any](items []T, ks []Keyed, q Query) Page[T] {
	dir := 1
	if q.Desc {
		dir = -1
	}
	start := 0
	if q.After != nil {
		start, _ = slices.BinarySearchFunc(ks, *q.After, func(a Keyed, k Key) int {
			if c := dir * a.K.compare(k); c != 0 {
				return c
			}
			return -1 // the cursor's own row was sent: start after it
		})
	}
	p := Page[T]{Total: len(ks), Rows: make([]T, 0, min(q.Limit, len(ks)-start))}
	last := -1
	for j := start; j < len(ks) && len(p.Rows) < q.Limit; j++ {
		// The cursor's own row may sort a hair later than when it was
		// sent (a lease's deadline is only known to a few ms): never twice.
		if q.After != nil && ks[j].K.Name == q.After.Name {
			continue
		}
		p.Rows = append(p.Rows, items[ks[j].I])
		last = j
	}
	if last >= 0 && last < len(ks)-1 {
		p.Next = encodeCursor(ks[last].K)
	}
	return p
}

package web

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/views"
	"github.com/lockwarden/lockwarden/web/live"
	"github.com/lockwarden/lockwarden/web/present"
)

// Paging bounds for list pages and list APIs.
const (
	defaultPageSize = 100
	maxPageSize     = 500
)

// Sort columns of the lock and limiter lists. A list's default is by name.
const (
	sortName     = "name"
	sortLease    = "lease"
	sortAge      = "age"
	sortHolder   = "holder"
	sortWaiters  = "waiters"
	sortRate     = "rate"
	sortAcquired = "acquired"
	sortRejected = "rejected"
	sortRatio    = "ratio"
)

var (
	lockSorts    = []string{sortName, sortLease, sortAge, sortHolder, sortContention, sortWaiters}
	limiterSorts = []string{sortName, sortRate, sortAcquired, sortRejected, sortRatio}
	lockKinds    = inspect.LockKinds()
	limiterKinds = inspect.LimiterKinds()
)

// errSampleFailed is the cause logged for a list refused because the
// sampler's last tick could not read Redis.
var errSampleFailed = errors.New("web: the sampler's last tick failed")

// noExpiryKey sorts a lock without a lease after every lock with one.
const noExpiryKey = 1 << 60

// listQuery is a list request: which rows (match, kind), in which order,
// and where the page starts.
type listQuery struct {
	Match  string
	glob   *inspect.Glob // Match compiled; nil for none
	Kind   inspect.Kind
	Sort   string
	Desc   bool
	Limit  int
	Cursor string   // as given; "" is the first page
	after  *sortKey // Cursor decoded
}

// sortKey places a row in a list's total order: num, then str, then name.
// A cursor is the key of the last row sent, so the next page starts after
// it even when rows were added or removed in between: nothing before it is
// repeated and nothing after it is skipped. Keys are chosen to stay put
// between ticks (a lease sorts by its deadline, an age by the first-seen
// instant), so only a row whose key itself changes can move across it.
type sortKey struct {
	Num  float64 `json:"n,omitempty"`
	Str  string  `json:"s,omitempty"`
	Name string  `json:"k"`
}

func (a sortKey) compare(b sortKey) int {
	if c := cmp.Compare(a.Num, b.Num); c != 0 {
		return c
	}
	if c := strings.Compare(a.Str, b.Str); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

func encodeCursor(k sortKey) string {
	b, _ := json.Marshal(k)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (*sortKey, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, err
	}
	var k sortKey
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&k); err != nil {
		return nil, err
	}
	if k.Name == "" {
		return nil, errors.New("cursor names no row")
	}
	return &k, nil
}

// parseListQuery reads ?match= ?kind= ?sort= ?order= ?limit= ?cursor=.
// Every bad value is a 400 naming the parameter; nothing is guessed.
func parseListQuery(c echo.Context, sorts []string, kinds []inspect.Kind) (listQuery, error) {
	q := listQuery{Sort: sortName, Limit: defaultPageSize}
	var err error
	if q.Match, q.glob, err = matchParam(c); err != nil {
		return q, err
	}
	if k := c.QueryParam("kind"); k != "" {
		if !slices.Contains(kinds, inspect.Kind(k)) {
			return q, inspect.Invalid("kind", fmt.Sprintf("kind must be one of %s", kindList(kinds)))
		}
		q.Kind = inspect.Kind(k)
	}
	if s := c.QueryParam("sort"); s != "" {
		if !slices.Contains(sorts, s) {
			return q, inspect.Invalid("sort", "sort must be one of "+strings.Join(sorts, ", "))
		}
		q.Sort = s
	}
	switch o := c.QueryParam("order"); o {
	case "", "asc":
	case "desc":
		q.Desc = true
	default:
		return q, inspect.Invalid("order", `order must be "asc" or "desc"`)
	}
	if l := c.QueryParam("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > maxPageSize {
			return q, inspect.Invalid("limit", fmt.Sprintf("limit must be a whole number from 1 to %d", maxPageSize))
		}
		q.Limit = n
	}
	if cur := c.QueryParam("cursor"); cur != "" {
		k, err := decodeCursor(cur)
		if err != nil || len(cur) > 4*store.MaxNameLen {
			return q, inspect.Invalid("cursor", "cursor is not one this console issued; start again from the first page")
		}
		q.Cursor, q.after = cur, k
	}
	return q, nil
}

func kindList(kinds []inspect.Kind) string {
	s := make([]string, len(kinds))
	for i, k := range kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// listPage is one page of a filtered, sorted list.
type listPage[T any] struct {
	Rows  []T
	Total int    // rows passing the filters, on every page
	Next  string // cursor of the next page; "" on the last
}

// keyed is an item's index in its snapshot slice and its sort key.
type keyed struct {
	i int
	k sortKey
}

// order filters items and sorts them as q asks. The result depends only on
// the snapshot and q's filters and sort, so it is kept on the snapshot and
// every later page of the same tick is a binary search. A filtered order
// is cut out of the unfiltered one in a single pass, so a new pattern
// costs one linear scan of the names, never a sort: sweeping patterns
// cannot get past the memo.
func order[T any](sn *live.Snapshot, list string, items []T, q listQuery, name func(*T) string, kind func(*T) inspect.Kind, key func(*T) sortKey) []keyed {
	ck := orderKey{list: list, match: q.Match, kind: q.Kind, sort: q.Sort, desc: q.Desc}
	memo := sn.Memo()
	if v, ok := memo.Load(ck); ok {
		return v.([]keyed)
	}
	if q.Match == "" && q.Kind == "" {
		ks := make([]keyed, 0, len(items))
		for i := range items {
			ks = append(ks, keyed{i, key(&items[i])})
		}
		dir := 1
		if q.Desc {
			dir = -1
		}
		slices.SortFunc(ks, func(a, b keyed) int { return dir * a.k.compare(b.k) })
		// Unfiltered orders are few (lists × sorts × directions): always
		// kept.
		memo.Keep(ck, ks)
		return ks
	}
	all := order(sn, list, items, listQuery{Sort: q.Sort, Desc: q.Desc}, name, kind, key)
	ks := make([]keyed, 0, len(all))
	for _, k := range all {
		it := &items[k.i]
		if q.Kind != "" && kind(it) != q.Kind {
			continue
		}
		if q.glob != nil && !q.glob.Match(name(it)) {
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
	list, match, sort string
	kind              inspect.Kind
	desc              bool
}

// pageOf cuts the page q asks for out of a sorted order.
func pageOf[T any](items []T, ks []keyed, q listQuery) listPage[T] {
	dir := 1
	if q.Desc {
		dir = -1
	}
	start := 0
	if q.after != nil {
		start, _ = slices.BinarySearchFunc(ks, *q.after, func(a keyed, k sortKey) int {
			if c := dir * a.k.compare(k); c != 0 {
				return c
			}
			return -1 // the cursor's own row was sent: start after it
		})
	}
	p := listPage[T]{Total: len(ks), Rows: make([]T, 0, min(q.Limit, len(ks)-start))}
	last := -1
	for j := start; j < len(ks) && len(p.Rows) < q.Limit; j++ {
		// The cursor's own row may sort a hair later than when it was
		// sent (a lease's deadline is only known to a few ms): never twice.
		if q.after != nil && ks[j].k.Name == q.after.Name {
			continue
		}
		p.Rows = append(p.Rows, items[ks[j].i])
		last = j
	}
	if last >= 0 && last < len(ks)-1 {
		p.Next = encodeCursor(ks[last].k)
	}
	return p
}

// lockKey is a lock's place in the order q.Sort asks for.
func lockKey(sn *live.Snapshot, sort string) func(*inspect.LockInfo) sortKey {
	// Redis's clock when the leases were read, so deadlines computed from
	// different ticks agree to the millisecond.
	taken := sn.SampledAt.UnixMilli()
	return func(l *inspect.LockInfo) sortKey {
		k := sortKey{Name: l.Name}
		switch sort {
		case sortLease:
			// The deadline, not the lease left: it stays put between ticks.
			if ms := present.LeaseMS(l.PTTL); ms < 0 {
				k.Num = noExpiryKey
			} else {
				k.Num = float64(taken + ms)
			}
		case sortAge:
			// Youngest first: the latest first-seen instant has the least age.
			k.Num = -noExpiryKey
			if t, ok := sn.FirstSeen[l.Name]; ok {
				k.Num = -float64(t.UnixMilli())
			}
		case sortHolder:
			if len(l.Holders) > 0 {
				k.Str = l.Holders[0].ID
			}
		case sortContention:
			// Most contended first, as the wall orders it.
			k.Num = -contentionKey(sn, l.Name)
		case sortWaiters:
			// Most waiters first, like youngest first for ages.
			k.Num = -float64(l.WaitersTotal)
		}
		return k
	}
}

// limiterKey is a limiter's place in the order q.Sort asks for.
func limiterKey(sn *live.Snapshot, sort string) func(*inspect.LimiterInfo) sortKey {
	return func(l *inspect.LimiterInfo) sortKey {
		k := sortKey{Name: l.Name}
		w := sn.Window(l.Name)
		switch sort {
		case sortRate:
			k.Num = l.PerSecond
		case sortAcquired:
			k.Num = float64(w.Acquired)
		case sortRejected:
			k.Num = float64(w.Rejected)
		case sortRatio:
			if t := w.Acquired + w.Rejected + w.Errors; t > 0 {
				k.Num = float64(w.Rejected) / float64(t)
			}
		}
		return k
	}
}

func lockName(l *inspect.LockInfo) string             { return l.Name }
func lockKind(l *inspect.LockInfo) inspect.Kind       { return l.Kind }
func limiterName(l *inspect.LimiterInfo) string       { return l.Name }
func limiterKind(l *inspect.LimiterInfo) inspect.Kind { return l.Kind }

// snapshotFor is the sampler's snapshot for a list. Lists never read Redis
// themselves: before the first tick there is nothing to show yet, and the
// answer says so rather than scanning the keyspace per request.
func (s *Server) snapshotFor() (*live.Snapshot, error) {
	sn := s.live.Latest()
	if sn == nil {
		return nil, inspect.Errorf(inspect.CodeUnavailable, "the console is still discovering objects in Redis; try again in a moment")
	}
	if !sn.RedisUp {
		// Stale rows would show leases counting down on locks that may be
		// long gone; the page says why instead.
		return nil, &inspect.Error{Code: inspect.CodeUnavailable,
			Message: "Redis is not answering; the lists come back when it does", Err: errSampleFailed}
	}
	return sn, nil
}

func (s *Server) lockList(c echo.Context) (*live.Snapshot, listQuery, listPage[inspect.LockInfo], error) {
	q, err := parseListQuery(c, lockSorts, lockKinds)
	if err != nil {
		return nil, q, listPage[inspect.LockInfo]{}, err
	}
	sn, err := s.snapshotFor()
	if err != nil {
		return nil, q, listPage[inspect.LockInfo]{}, err
	}
	ks := order(sn, "locks", sn.Locks, q, lockName, lockKind, lockKey(sn, q.Sort))
	return sn, q, pageOf(sn.Locks, ks, q), nil
}

func (s *Server) limiterList(c echo.Context) (*live.Snapshot, listQuery, listPage[inspect.LimiterInfo], error) {
	q, err := parseListQuery(c, limiterSorts, limiterKinds)
	if err != nil {
		return nil, q, listPage[inspect.LimiterInfo]{}, err
	}
	sn, err := s.snapshotFor()
	if err != nil {
		return nil, q, listPage[inspect.LimiterInfo]{}, err
	}
	ks := order(sn, "limiters", sn.Limiters, q, limiterName, limiterKind, limiterKey(sn, q.Sort))
	return sn, q, pageOf(sn.Limiters, ks, q), nil
}

// listNav is the paging and sorting links of a server-rendered list; they
// keep the filters and work without JavaScript.
func listNav(path string, q listQuery, sorts []string, kinds []inspect.Kind, total, shown int, next string) views.ListNav {
	base := func(mod func(url.Values)) string {
		v := url.Values{}
		if q.Match != "" {
			v.Set("match", q.Match)
		}
		if q.Kind != "" {
			v.Set("kind", string(q.Kind))
		}
		if q.Sort != sortName {
			v.Set("sort", q.Sort)
		}
		if q.Desc {
			v.Set("order", "desc")
		}
		if q.Limit != defaultPageSize {
			v.Set("limit", strconv.Itoa(q.Limit))
		}
		mod(v)
		if len(v) == 0 {
			return path
		}
		return path + "?" + v.Encode()
	}
	n := views.ListNav{Total: total, Shown: shown, Match: q.Match, Kind: string(q.Kind),
		Sort: q.Sort, Desc: q.Desc, Paged: q.Cursor != ""}
	if next != "" {
		n.NextURL = base(func(v url.Values) { v.Set("cursor", next) })
	}
	if q.Cursor != "" {
		n.FirstURL = base(func(url.Values) {})
	}
	// Live rows may be added only where the page is the whole list in the
	// order the script inserts them (by name).
	n.Partial = q.Cursor != "" || next != "" || q.Sort != sortName || q.Desc || q.Kind != ""
	for _, s := range sorts {
		desc := s == q.Sort && !q.Desc
		n.Sorts = append(n.Sorts, views.SortLink{Name: s, Active: s == q.Sort, Desc: s == q.Sort && q.Desc,
			URL: base(func(v url.Values) {
				v.Del("sort")
				v.Del("order")
				if s != sortName {
					v.Set("sort", s)
				}
				if desc {
					v.Set("order", "desc")
				}
			})})
	}
	for _, k := range kinds {
		n.Kinds = append(n.Kinds, string(k))
	}
	return n
}

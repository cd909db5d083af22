package inspect

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Framework conventions: the locks and limiters other libraries write
// (ShedLock, Laravel, python-redis-lock, sidekiq-unique-jobs, Symfony
// Lock, BullMQ, Spring Integration, DistributedLock.Redis; bottleneck,
// express-rate-limit, Upstash, Envoy's ratelimit). Each is in one file,
// conv_<name>.go: its kind, which names it claims, how its value parses
// into the model, and how the console breaks or resets one as the library
// itself would (waking its own waiters). This file is what they share:
// the list, the dispatch by key type, and the memory of which names hold
// which convention.
//
// A convention is recognised from its key and its value, never the name
// alone: a string is read only when a convention claims its name (a cache
// string under another name is never transferred), and listed only when
// its value has that library's shape. What made the console decide is
// kept on the object (LockInfo.Recognised, LimiterInfo.Recognised), so a
// reader can judge an ambiguous case.

// convention is one framework's layout.
type convention struct {
	kind    Kind
	limiter bool
	// keyType is the Redis type the layout uses: "string", "hash" or "zset".
	keyType string
	// claims says whether a string key of this name may be one (string
	// layouts only; hashes and zsets are known by their contents).
	claims func(p ObjectPatterns, name string) bool
	// parse reads one key as the walk, a sample or GetLock read it; ok
	// false when it is not this layout.
	parse func(p ObjectPatterns, k convKey) (convFound, bool)
	// side queues further reads a found object's facts need (nil: none)
	// and returns what applies them.
	side func(ctx context.Context, pipe redis.Pipeliner, name string) func(*convFound)
	// release breaks a lock for holder (lock kinds); reset forgets a
	// limiter's state (limiter kinds). Both return the script's code.
	release func(ctx context.Context, c *Inspector, l *LockInfo, holder string) (int64, error)
	plan    func(l *LockInfo, holder string) ForceUnlockPlan
	reset   func(ctx context.Context, c *Inspector, l *LimiterInfo) (int64, error)
}

// convKey is one key as read: a string's value (bounded), a hash's
// fields, or a zset's first members, with its lease and Redis time.
type convKey struct {
	name    string
	value   string            // string
	fields  map[string]string // hash
	members []redis.Z         // zset, lowest score first
	card    int64             // zset: all members
	pttl    time.Duration
	nowMS   int64
}

// convFound is what a convention found in one key.
type convFound struct {
	lock *LockInfo
	lim  *LimiterInfo
}

// conventions are every convention, in the order they are tried.
var conventions = []*convention{
	shedlockConvention,
	pyRedisLockConvention,
	bullmqConvention,
	springConvention,
	dotnetConvention,
	laravelLockConvention,
	sidekiqConvention,
	symfonyConvention,
	bottleneckConvention,
	laravelThrottleConvention,
	upstashConvention,
	upstashBucketConvention,
	expressRateLimitConvention,
	envoyConvention,
}

// conventionOf is the convention of kind k whose layout has the key type
// keyType ("" for any); nil for lockwarden's own kinds.
func conventionOf(k Kind, keyType string) *convention {
	for _, c := range conventions {
		if c.kind == k && (keyType == "" || c.keyType == keyType) {
			return c
		}
	}
	return nil
}

// conventionKinds are the conventions' lock (or limiter) kinds, in order.
func conventionKinds(limiter bool) []Kind {
	var out []Kind
	for _, c := range conventions {
		if c.limiter == limiter && !slices.Contains(out, c.kind) {
			out = append(out, c.kind)
		}
	}
	return out
}

// IsConvention reports whether k is another library's convention.
func IsConvention(k Kind) bool { return conventionOf(k, "") != nil }

// claimsString reports whether some convention claims the string key name
// (a member of a counter family is the family's).
func (p ObjectPatterns) claimsString(name string) bool {
	if p.Grouped(name) {
		return false
	}
	for _, c := range conventions {
		if c.keyType == "string" && c.claims(p, name) {
			return true
		}
	}
	return false
}

// classifyConvention tries every convention of k's type on one key. When
// more than one layout fits, the first is kept and its Recognised says
// which others would have fitted.
func classifyConvention(p ObjectPatterns, keyType string, k convKey) (convFound, bool) {
	var found convFound
	var first *convention
	var others []string
	for _, c := range conventions {
		if c.keyType != keyType || (keyType == "string" && !c.claims(p, k.name)) {
			continue
		}
		f, ok := c.parse(p, k)
		if !ok {
			continue
		}
		if first == nil {
			first, found = c, f
			continue
		}
		others = append(others, string(c.kind))
	}
	if first == nil {
		return convFound{}, false
	}
	if len(others) > 0 {
		found.noteAlso(others)
	}
	p.conv.set(k.name, first)
	return found, true
}

func (f *convFound) noteAlso(others []string) {
	note := "; the value also fits " + strings.Join(others, ", ")
	if f.lock != nil {
		f.lock.Recognised += note
	}
	if f.lim != nil {
		f.lim.Recognised += note
	}
}

// convMemo remembers the convention kind of the names classified as one,
// so a sample reads each with its own layout's read (a Symfony lock is a
// zset under any name). Bounded: past maxConvMemo names, new ones are read
// by their name's claims alone.
type convMemo struct {
	m sync.Map // name -> *convention
	n atomic.Int64
	// expiry is what ShedLock's state needs of the last read.
	expiry sync.Map // name -> value and expiry seen
	// domains are the Envoy domains discovery met (conv_envoy.go).
	domains  sync.Map // domain -> struct{}
	nDomains atomic.Int64
	// expressSeen: discovery met express-rate-limit's counters (conv_express.go).
	expressSeen atomic.Bool
}

const maxConvMemo = 100_000

func (m *convMemo) of(name string) *convention {
	if m == nil {
		return nil
	}
	if c, ok := m.m.Load(name); ok {
		return c.(*convention)
	}
	return nil
}

func (m *convMemo) set(name string, k *convention) {
	if m == nil {
		return
	}
	if old, loaded := m.m.Load(name); loaded && old.(*convention) == k {
		return
	}
	if m.n.Load() >= maxConvMemo {
		return
	}
	if _, loaded := m.m.Swap(name, k); !loaded {
		m.n.Add(1)
	}
}

func (m *convMemo) forget(name string) {
	if m == nil {
		return
	}
	if _, loaded := m.m.LoadAndDelete(name); loaded {
		m.n.Add(-1)
	}
	m.expiry.Delete(name)
}

// sortHolders orders holders by id, so listings are stable.
func sortHolders(hs []Holder) {
	sort.Slice(hs, func(i, j int) bool { return hs[i].ID < hs[j].ID })
}

// Holder and limiter facts: what a convention's value says about who holds
// a lock or how a limiter is set, by these names.
const (
	FactHost     = "host"
	FactPID      = "pid"
	FactSince    = "since" // RFC 3339, UTC
	FactJob      = "job"
	FactQueue    = "queue"
	FactWorker   = "worker"
	FactState    = "state"
	FactLayout   = "layout"
	FactExpires  = "expires" // RFC 3339, UTC
	FactLimit    = "limit"
	FactRunning  = "running"
	FactDomain   = "domain"
	FactClientID = "client"
)

// describeFacts says a foreign holder's facts in words, for Holder.Who.
func describeFacts(f map[string]string) string {
	var parts []string
	if h := f[FactHost]; h != "" {
		s := "host " + h
		if pid := f[FactPID]; pid != "" {
			s += " (pid " + pid + ")"
		}
		parts = append(parts, s)
	}
	for _, k := range []string{FactWorker, FactJob, FactQueue, FactState} {
		if v := f[k]; v != "" {
			parts = append(parts, k+" "+v)
		}
	}
	if len(parts) == 0 {
		keys := make([]string, 0, len(f))
		for k := range f {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			parts = append(parts, k+" "+f[k])
		}
	}
	return strings.Join(parts, ", ")
}

// rfc3339 formats epoch ms for a fact.
func rfc3339(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano) }

// isAlnum reports whether s is only ASCII letters and digits.
func isAlnum(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return s != ""
}

// isHex reports whether s is only lower-case hex digits.
func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return s != ""
}

// isBase64 reports whether s is standard base64 of n bytes (padded).
func isBase64(s string, n int) bool {
	want := (n + 2) / 3 * 4
	if len(s) != want {
		return false
	}
	pad := (3 - n%3) % 3
	for i := 0; i < len(s); i++ {
		c := s[i]
		if i >= len(s)-pad {
			if c != '=' {
				return false
			}
			continue
		}
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '/') {
			return false
		}
	}
	return true
}

// isUUID reports whether s is a canonical UUID (8-4-4-4-12 hex, either case).
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// stringLock is a string lock of kind k held by value.
func stringLock(k convKey, kind Kind, why string, facts map[string]string) *LockInfo {
	return &LockInfo{Name: k.name, Kind: kind, PTTL: k.pttl, Recognised: why,
		Holders: []Holder{{ID: k.value, Count: 1, Facts: facts}}}
}

// scriptCode is a convention script's return code; WRONGTYPE is
// store.ErrWrongKind.
func scriptCode(cmd *redis.Cmd) (int64, error) {
	n, err := cmd.Int64()
	if err != nil {
		return 0, wrongKindErr(err)
	}
	return n, nil
}

// DescribeReset says what the console's reset does to l, and whether it
// has one: an access counter's hits are forgotten; another library's
// limiter is reset as that library's own reset does. "" with ok true is an
// access counter (the console's own words).
func (l *LimiterInfo) DescribeReset() (text string, ok bool) {
	if l.Kind == KindCounter {
		return "", true
	}
	cv := conventionOf(l.Kind, "")
	if cv == nil || cv.reset == nil {
		return "", false
	}
	switch l.Kind {
	case KindBottleneck:
		return fmt.Sprintf("Refills the reservoir to its refresh amount (%s) now, as bottleneck's own refresh does, and publishes the capacity on %s so the clients' queued jobs run at once. Refused when the limiter has no reservoir refresh.", l.Facts["reservoirRefreshAmount"], l.Facts["channel"]), true
	case KindLaravelThrottle:
		return fmt.Sprintf("Deletes %s, as Laravel's DurationLimiter clear() does: the next attempt starts a new window.", l.Name), true
	}
	return fmt.Sprintf("Deletes %s, as the library's own reset does: the client it limits is admitted again at once and its next request starts a new window. The limit itself is the application's.", l.Name), true
}

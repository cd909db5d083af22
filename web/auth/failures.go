package auth

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/luascripts"
	"github.com/lockwarden/lockwarden/store"
)

// Failures limits token guessing. Every wrong token (on the sign-in page
// or as a Bearer header) is counted in Redis per source address and for
// all sources together, so every replica enforces the same limits. Past a
// few free failures each further one of a source doubles the wait before
// that source may have a token checked again. Past a larger allowance of
// all sources together, each further failure anywhere doubles an overall
// wait, which every source that then fails must sit out before its next
// check: a flood from many addresses slows each of them from its first
// wrong token. While a source waits the console answers it 429 with
// Retry-After and checks none of its tokens, so one address cannot go on
// guessing at full speed even with the right answer in the batch; a
// source that has not failed (the admin's) has its token checked at once
// however many others guess (auth_fail_wait.lua reads the source's wait
// only). Sessions already signed in are not affected.
//
// When Redis does not answer, each replica counts alone, in memory, by the
// same rules (local), so a Bearer token, a Prometheus scrape of /metrics
// included, is still checked while Redis is down, and guessing is still
// slowed.
//
// It also keeps, in memory, a summary per source of what was refused
// since the last Drain, for the audit trail.
type Failures struct {
	rdb  redis.UniversalClient
	keys Keys
	opts FailureOptions

	failed  [2]atomic.Uint64 // by Via
	limited atomic.Uint64

	mu       sync.Mutex
	blocked  map[string]time.Time   // source -> end of its wait, as last told by Redis
	local    map[string]*localCount // failures counted while Redis did not answer
	localAll localCount             // ... of every source together
	summary  map[string]*FailureSummary
	// recent counts this replica's wrong tokens and limited attempts per
	// second over the last RecentSpan (ring indexed by Unix second), for the alert.
	recent [recentSeconds]struct {
		sec int64
		n   int
	}
}

// RecentSpan is the span Recent counts over.
const RecentSpan = recentSeconds * time.Second

const recentSeconds = 60

// FailureOptions adjust Failures; nil or zero fields are the defaults.
type FailureOptions struct {
	// FreePerSource failures of one source wait for nothing (default 5);
	// FreeTotal of all sources together (default 100): past it every
	// failing source waits at least the overall wait.
	FreePerSource, FreeTotal int
	// FirstWait is the wait after the first failure past the free ones;
	// it doubles with each further one (default 1 s).
	FirstWait time.Duration
	// MaxWaitSource caps the wait a source's own failures impose (default
	// 15 min); MaxWaitTotal caps the overall wait (default 1 min: during
	// a flood from many addresses, a legitimate user who mistypes waits
	// at most a minute; one who does not is never held up).
	MaxWaitSource, MaxWaitTotal time.Duration
	// ForgetSource and ForgetTotal: counts start again this long after
	// the last failure (defaults 15 min and 5 min).
	ForgetSource, ForgetTotal time.Duration
}

func (o *FailureOptions) withDefaults() FailureOptions {
	var v FailureOptions
	if o != nil {
		v = *o
	}
	def := func(d *time.Duration, x time.Duration) {
		if *d <= 0 {
			*d = x
		}
	}
	if v.FreePerSource <= 0 {
		v.FreePerSource = 5
	}
	if v.FreeTotal <= 0 {
		v.FreeTotal = 100
	}
	def(&v.FirstWait, time.Second)
	def(&v.MaxWaitSource, 15*time.Minute)
	def(&v.MaxWaitTotal, time.Minute)
	def(&v.ForgetSource, 15*time.Minute)
	def(&v.ForgetTotal, 5*time.Minute)
	return v
}

// Via says how a token was presented.
type Via int

const (
	ViaSignIn Via = iota // the sign-in form
	ViaBearer            // an Authorization: Bearer header
)

func (v Via) String() string {
	if v == ViaBearer {
		return "bearer"
	}
	return "sign-in"
}

// FailureSummary is what one source had refused since the last Drain.
type FailureSummary struct {
	Source      string
	Failed      int // wrong tokens
	Limited     int // attempts answered 429 without a check
	First, Last time.Time
}

// localCount is one source's failures counted in memory.
type localCount struct {
	n    int
	last time.Time
}

// Bounds on the in-memory state, whatever the number of addresses.
const (
	maxBlocked = 4096
	maxSummary = 1024
	// OtherSources names the summary of sources past maxSummary.
	OtherSources = "other"
)

var (
	failWaitScript   = store.NewScript(luascripts.Source("auth_fail_wait"))
	failRecordScript = store.NewScript(luascripts.Source("auth_fail_record"))
)

// NewFailures counts failures in rdb under keys.
func NewFailures(rdb redis.UniversalClient, keys Keys, opts *FailureOptions) *Failures {
	return &Failures{rdb: rdb, keys: keys, opts: opts.withDefaults(),
		blocked: map[string]time.Time{}, local: map[string]*localCount{}, summary: map[string]*FailureSummary{}}
}

// Source is the address failures are counted by: an IPv4 address, or the
// /64 network of an IPv6 one (one host usually holds a whole /64).
func Source(ip string) string {
	p := net.ParseIP(ip)
	if p == nil {
		return ip
	}
	if p.To4() != nil {
		return p.String()
	}
	return (&net.IPNet{IP: p.Mask(net.CIDRMask(64, 128)), Mask: net.CIDRMask(64, 128)}).String()
}

// Wait is how long source must wait before a token of its may be checked;
// 0 means check it now. A wait that is running is counted as a limited
// attempt. When Redis does not answer, only this replica's own waits
// count; the error is nil either way (kept for callers that may refuse).
func (f *Failures) Wait(ctx context.Context, source string, now time.Time) (time.Duration, error) {
	f.mu.Lock()
	until, ok := f.blocked[source]
	f.mu.Unlock()
	wait := time.Duration(0)
	if ok && until.After(now) {
		// Known here: a flood from a waiting source costs no Redis call.
		wait = until.Sub(now)
	} else {
		ms, err := failWaitScript.Run(ctx, f.rdb, []string{f.keys.Failures(source)}).Int64()
		if err == nil {
			wait = time.Duration(ms) * time.Millisecond
		}
	}
	if wait > 0 {
		f.limited.Add(1)
		f.note(source, now, func(s *FailureSummary) { s.Limited++ })
		f.countRecent(now)
	}
	return wait, nil
}

// Fail counts a wrong token from source and returns the wait now imposed
// (0 while failures are free).
func (f *Failures) Fail(ctx context.Context, source string, via Via, now time.Time) (time.Duration, error) {
	f.failed[via].Add(1)
	f.note(source, now, func(s *FailureSummary) { s.Failed++ })
	f.countRecent(now)
	o := f.opts
	v, err := failRecordScript.Run(ctx, f.rdb, []string{f.keys.Failures(source), f.keys.AllFailures()},
		o.FreePerSource, o.FreeTotal, o.FirstWait.Milliseconds(), o.MaxWaitSource.Milliseconds(),
		o.MaxWaitTotal.Milliseconds(), o.ForgetSource.Milliseconds(), o.ForgetTotal.Milliseconds()).Int64Slice()
	var wait time.Duration
	if err == nil && len(v) == 2 {
		wait = time.Duration(v[1]) * time.Millisecond
	} else {
		wait = f.failLocally(source, now)
	}
	if wait > 0 {
		f.mu.Lock()
		if len(f.blocked) >= maxBlocked {
			for s, u := range f.blocked {
				if !u.After(now) {
					delete(f.blocked, s)
				}
			}
		}
		if len(f.blocked) < maxBlocked {
			f.blocked[source] = now.Add(wait)
		}
		f.mu.Unlock()
	}
	return wait, nil
}

// failLocally counts a failure in memory, as auth_fail_record.lua counts
// it, and returns the wait it imposes.
func (f *Failures) failLocally(source string, now time.Time) time.Duration {
	o := f.opts
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.local[source]
	if !ok {
		if len(f.local) >= maxBlocked {
			for s, lc := range f.local {
				if now.Sub(lc.last) > o.ForgetSource {
					delete(f.local, s)
				}
			}
		}
		if len(f.local) >= maxBlocked {
			source = OtherSources // past the bound, one count for the rest
		}
		if c, ok = f.local[source]; !ok {
			c = &localCount{}
			f.local[source] = c
		}
	}
	return max(c.add(now, o.ForgetSource, o.FreePerSource, o.FirstWait, o.MaxWaitSource),
		f.localAll.add(now, o.ForgetTotal, o.FreeTotal, o.FirstWait, o.MaxWaitTotal))
}

// add counts one failure at now (after forgetting those older than
// forget) and returns the wait it imposes: none for the free ones, then
// first, doubling up to longest.
func (c *localCount) add(now time.Time, forget time.Duration, free int, first, longest time.Duration) time.Duration {
	if now.Sub(c.last) > forget {
		c.n = 0
	}
	c.n++
	c.last = now
	if c.n <= free {
		return 0
	}
	wait := first
	for i := free + 1; i < c.n && wait < longest; i++ {
		wait *= 2
	}
	return min(wait, longest)
}

// note updates source's summary. Sources past maxSummary share one
// summary, OtherSources.
func (f *Failures) note(source string, now time.Time, update func(*FailureSummary)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.summary[source]
	if !ok && len(f.summary) >= maxSummary {
		source = OtherSources
		s, ok = f.summary[source]
	}
	if !ok {
		s = &FailureSummary{Source: source, First: now}
		f.summary[source] = s
	}
	s.Last = now
	update(s)
}

// countRecent adds one attempt to this second's count.
func (f *Failures) countRecent(now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	slot := &f.recent[now.Unix()%recentSeconds]
	if slot.sec != now.Unix() {
		slot.sec, slot.n = now.Unix(), 0
	}
	slot.n++
}

// Recent is how many wrong tokens and refused attempts this replica saw in the RecentSpan
// before now: what the auth-failures alert judges.
func (f *Failures) Recent(now time.Time) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, s := range f.recent {
		if age := now.Unix() - s.sec; age >= 0 && age < recentSeconds {
			n += s.n
		}
	}
	return n
}

// Drain returns the summaries since the last Drain and starts afresh.
func (f *Failures) Drain() []FailureSummary {
	f.mu.Lock()
	defer f.mu.Unlock()
	return drain(f.summary)
}

// drain empties m and returns copies of what it held.
func drain[K comparable, V any](m map[K]*V) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, *v)
	}
	clear(m)
	return out
}

// FailureCounts are running totals since start, for /metrics.
type FailureCounts struct {
	SignIn, Bearer uint64 // wrong tokens
	Limited        uint64 // attempts answered 429 without a check
}

// Counts returns the running totals.
func (f *Failures) Counts() FailureCounts {
	return FailureCounts{SignIn: f.failed[ViaSignIn].Load(), Bearer: f.failed[ViaBearer].Load(), Limited: f.limited.Load()}
}

package history

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/live"
)

// closeTimeout bounds handing the writer lock back on shutdown.
const closeTimeout = 2 * time.Second

// Recorder is the history as the console runs it: Open starts the
// History on the console's Redis; Observe, one of live's observers, hands
// it one Sample per stats bucket; ForceUnlocked, one of admin's
// listeners, marks the holds the console broke; Run closes it when the
// console stops, handing the writer lock back at once.
//
// Observe runs on a goroutine of its own (a live.Detached: the newest
// snapshot when it falls behind; turning a snapshot of thousands of
// objects into a Sample is no work for the tick's) and owns the fields
// below h; ctx is set by Open before h, and neither changes afterwards.
type Recorder struct {
	h   atomic.Pointer[History]
	ctx context.Context
	log *slog.Logger
	// lastAt is the last snapshot's At handed on.
	lastAt int64
	// buckets are, per limiter, the newest complete stats bucket handed on
	// and the At of the snapshot that last listed it.
	buckets map[string]seenBucket
	// waits are the wait totals of each lock at the last snapshot that
	// listed it with waits (store/inspect's WaitTotals, monotonic while
	// the lock stays active), and that snapshot's At.
	waits map[string]seenWaits
	// violations is the live.Snapshot.ViolationsTotal handed on.
	violations int64
}

type seenBucket struct{ bucket, at int64 }

func (b seenBucket) seenAt() int64 { return b.at }
func (w seenWaits) seenAt() int64  { return w.at }

// forgetBefore drops the objects last listed before t.
func forgetBefore[V interface{ seenAt() int64 }](m map[string]V, t int64) {
	for name, v := range m {
		if v.seenAt() < t {
			delete(m, name)
		}
	}
}

type seenWaits struct {
	total inspect.WaitTotals
	at    int64
}

// waitsKeptMS is how long the Recorder keeps the totals of a lock the
// snapshots stopped listing (its key vanished between two holds): longer
// than store/inspect keeps them (a minute without a read), so a lock that
// comes back within it continues from where it was rather than counting
// its totals again.
const waitsKeptMS = 2 * 60_000

// Observe hands sn on, one snapshot per stats bucket. A snapshot without
// Redis is skipped: the history would read its missing locks as gone. So
// is one of the same bucket as the last (a tick faster than a bucket):
// the history writes what a sample changed only when its time is past
// the last one written (holdArgs), so a second sample at the
// same time could end a hold that is never written. Limiter counts go on
// bucket by bucket (limiterSamples), so each counts once.
func (f *Recorder) Observe(sn *live.Snapshot) {
	h := f.h.Load()
	if h == nil {
		return
	}
	if s, ok := f.sample(sn); ok {
		h.Observe(f.ctx, s)
	}
	f.heard(h, sn)
}

// heard hands on what the lease violations reported since the last
// snapshot say of holds that ended: an eviction is how its hold ended,
// a late release or renewal is its holder working on past the end.
func (f *Recorder) heard(h *History, sn *live.Snapshot) {
	if sn == nil || sn.ViolationsTotal <= f.violations {
		return
	}
	n := min(int(sn.ViolationsTotal-f.violations), len(sn.Violations))
	f.violations = sn.ViolationsTotal
	for _, v := range sn.Violations[len(sn.Violations)-n:] {
		var err error
		switch v.Kind {
		case live.ViolationEvicted:
			err = h.Evicted(f.ctx, v.Lock, v.Holder, v.At)
		case live.ViolationReleasedAfterExpiry:
			err = h.WorkedOn(f.ctx, v.Lock, v.Holder, v.At)
		}
		if err != nil {
			f.log.Warn("recording a lease violation in the history", "lock", v.Lock, "kind", v.Kind, "err", err)
		}
	}
}

// sample is what Observe hands on for sn; false when nothing.
func (f *Recorder) sample(sn *live.Snapshot) (Sample, bool) {
	if sn == nil || !sn.RedisUp || sn.At <= f.lastAt {
		return Sample{}, false
	}
	first := f.lastAt == 0
	f.lastAt = sn.At
	s := Sample{At: time.UnixMilli(sn.At), Locks: make([]LockSample, 0, len(sn.Locks)),
		Limiters: f.limiterSamples(sn, first)}
	// One array for every lock's holders: at 10,000 locks a slice each
	// was 10,000 allocations a tick.
	n := 0
	for _, l := range sn.Locks {
		n += len(l.Holders)
	}
	holders := make([]Holder, 0, n)
	if f.waits == nil {
		f.waits = map[string]seenWaits{}
	}
	for _, l := range sn.Locks {
		var ls LockSample
		ls, holders = lockSample(sn, l, holders)
		ls.Wait = f.waitSample(sn, l.Name, first)
		s.Locks = append(s.Locks, ls)
	}
	// A lock gone a moment ago is listed free, with what its scripts
	// recorded as it went (a hand-off's wait, the lock then released
	// before any read saw the new holder).
	for _, name := range sn.Lingered {
		if w := f.waitSample(sn, name, first); !w.zero() {
			s.Locks = append(s.Locks, LockSample{Name: name, PTTL: -1, Wait: w})
		}
	}
	if sn.At/1000 != (sn.At-inspect.BucketMS)/1000 { // once a second
		forgetBefore(f.waits, sn.At-waitsKeptMS)
		forgetBefore(f.buckets, sn.At-waitsKeptMS)
	}
	return s, true
}

// waitSample is what the lock at name recorded since the last snapshot
// handed on: the difference of its wait totals, which counts each bucket
// once however the ticks fall (a repeated or a late one, or snapshots
// that left the lock out while nobody held it). The first snapshot only
// sets the baseline: its totals include buckets from before this console
// started. Totals that are new (a snapshot listed the lock without
// waits: store/inspect dropped them after a minute idle) or went back
// (dropped and begun again unseen) count from zero. The max is the newest
// 1 s window's, raised to the lower bound of the longest class counted,
// so a wait is never shorter than its class says.
func (f *Recorder) waitSample(sn *live.Snapshot, name string, first bool) WaitSample {
	w := sn.Stats[name].Wait
	if w == nil {
		delete(f.waits, name)
		return WaitSample{}
	}
	seen := f.waits[name]
	f.waits[name] = seenWaits{total: w.Total, at: sn.At}
	if first {
		return WaitSample{}
	}
	prev := seen.total
	if w.Total.Acquired < prev.Acquired || w.Total.Count < prev.Count {
		prev = inspect.WaitTotals{}
	}
	out := WaitSample{Acquired: w.Total.Acquired - prev.Acquired, Contended: w.Total.Count - prev.Count,
		TotalMS: w.Total.SumMS - prev.SumMS}
	for i := range out.Classes {
		out.Classes[i] = max(w.Total.Classes[i]-prev.Classes[i], 0)
		if out.Classes[i] > 0 && i > 0 {
			out.MaxMS = inspect.WaitClassBoundsMS[i-1]
		}
	}
	if out.Contended > 0 {
		out.MaxMS = max(out.MaxMS, w.Second.MaxMS)
	}
	return out
}

// limiterSamples are the stats buckets each limiter completed since the
// last snapshot handed on, read one by one from its Summary.Recent a
// bucket behind the newest, so a bucket counts once however the ticks fall (a late tick's buckets too,
// up to inspect.RecentBuckets). On the console's first snapshot every
// limiter starts from its next bucket: the ones before were counted by
// whichever replica ran then. A limiter first listed later counts the
// buckets its Summary carries: its attempts are what made it listed.
func (f *Recorder) limiterSamples(sn *live.Snapshot, first bool) []LimiterSample {
	if f.buckets == nil {
		f.buckets = map[string]seenBucket{}
	}
	var out []LimiterSample
	for _, l := range sn.Limiters {
		if l.Stale != nil {
			continue // a node that did not answer has no new bucket
		}
		st := sn.Stats[l.Name]
		// The newest bucket surely complete: on a Cluster the ring may be
		// read just before the TIME (another master's) that set Bucket, so
		// Bucket-1 can still grow after this read.
		done := st.Bucket - 2
		seen, ok := f.buckets[l.Name]
		switch {
		case !ok && first:
			seen.bucket = done
		case !ok:
			seen.bucket = done - inspect.RecentBuckets
		}
		// A snapshot that did not read the limiter (an idle one is read
		// every few seconds) carries no Recent: it moves nothing on, so the
		// next read counts the buckets it saw filled since.
		var c inspect.Counts
		if st.Recent != nil {
			for b := max(seen.bucket+1, st.Bucket-inspect.RecentBuckets); b <= done; b++ {
				c = c.Add(st.Recent[inspect.RecentBuckets-int(st.Bucket-b)])
			}
			seen.bucket = max(seen.bucket, done)
		}
		f.buckets[l.Name] = seenBucket{bucket: seen.bucket, at: sn.At}
		if c != (inspect.Counts{}) {
			out = append(out, LimiterSample{Name: l.Name, Kind: string(l.Kind),
				Acquired: c.Acquired, Rejected: c.Rejected, Errors: c.Errors})
		}
	}
	return out
}

// lockSample is l with its holders' identities from the registry, kept in
// holders (returned grown). A lock whose node did not answer keeps the
// holders it was last read with.
func lockSample(sn *live.Snapshot, l inspect.LockInfo, holders []Holder) (LockSample, []Holder) {
	ls := LockSample{Name: l.Name, Kind: string(l.Kind), PTTL: l.PTTL, Waiters: l.WaitersTotal}
	if len(l.Holders) == 0 {
		return ls, holders
	}
	first := len(holders)
	for _, h := range l.Holders {
		hd := Holder{ID: h.ID, Mode: h.Mode}
		if h.AcquiredMS > 0 {
			hd.Since = time.UnixMilli(h.AcquiredMS)
		}
		if ci, ok := sn.Registry.Lookup(h.ID); ok {
			hd.App, hd.Host, hd.PID = ci.App, ci.Host, ci.PID
		}
		holders = append(holders, hd)
	}
	ls.Holders = holders[first:len(holders):len(holders)]
	return ls, holders
}

// NewRecorder is a Recorder that keeps nothing until Open; logger (nil:
// none) hears of what fails after the change it follows is done.
func NewRecorder(logger *slog.Logger) *Recorder {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Recorder{log: logger}
}

// Open starts the History on rdb. ctx bounds the samples Observe hands
// on; the History itself outlives ctx's cancellation until Run closes it.
func (f *Recorder) Open(ctx context.Context, rdb redis.UniversalClient, opts *Options) error {
	h, err := Open(context.WithoutCancel(ctx), rdb, opts)
	if err != nil {
		return err
	}
	f.ctx = ctx
	f.h.Store(h)
	return nil
}

// History is the running History; nil before Open (and when the console
// keeps none).
func (f *Recorder) History() *History { return f.h.Load() }

// Run waits for ctx to end and closes the History, handing the writer
// lock to another replica at once. It returns at once when there is none.
func (f *Recorder) Run(ctx context.Context) {
	h := f.h.Load()
	if h == nil {
		return
	}
	<-ctx.Done()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
	defer cancel()
	if err := h.Close(cctx); err != nil {
		f.log.Warn("closing the history", "err", err)
	}
}

// ForceUnlocked records that the console ended holder's hold of lock
// name by force (admin's listener). The change itself is done, so a
// failure is only logged.
func (f *Recorder) ForceUnlocked(ctx context.Context, name, holder string, _ time.Time) {
	h := f.h.Load()
	if h == nil {
		return
	}
	if err := h.Ended(ctx, name, holder, EndForceUnlocked); err != nil {
		f.log.Warn("recording a force-unlock in the history", "lock", name, "err", err)
	}
}

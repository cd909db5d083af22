package web

import (
	"context"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/admin"
	"github.com/lockwarden/lockwarden/web/history"
	"github.com/lockwarden/lockwarden/web/live"
)

// The history part (web/history) as the console runs it: opened with the
// server, handed every snapshot as one of live's observers, closed first
// so that its writer lock goes to another replica at once.

// historyCloseTimeout bounds handing the writer lock back on shutdown.
const historyCloseTimeout = 2 * time.Second

// historyOff says Config turns the history off (a negative HistoryTop).
func (c *Config) historyOff() bool { return c != nil && c.HistoryTop < 0 }

func (c *Config) historyOptions() *history.Options {
	return &history.Options{FineRetention: c.HistoryFine, CoarseRetention: c.HistoryCoarse, Top: c.HistoryTop}
}

// historyFeed turns each snapshot into a history.Sample. It runs on a
// goroutine of its own (Server.histObs, a live.Detached: the newest
// snapshot when it falls behind) and owns its fields; h is set by Open
// before that goroutine starts and never changes afterwards.
type historyFeed struct {
	h   *history.History
	ctx context.Context
	// lastAt is the last snapshot's At handed on.
	lastAt int64
	// buckets are, per limiter, the newest complete stats bucket handed on
	// and the At of the snapshot that last listed it.
	buckets map[string]seenBucket
	// waits are the wait totals of each lock at the last snapshot that
	// listed it with waits (store/inspect's WaitTotals, monotonic while
	// the lock stays active), and that snapshot's At.
	waits map[string]seenWaits
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

// waitsKeptMS is how long the feed keeps the totals of a lock the
// snapshots stopped listing (its key vanished between two holds): longer
// than store/inspect keeps them (a minute without a read), so a lock that
// comes back within it continues from where it was rather than counting
// its totals again.
const waitsKeptMS = 2 * 60_000

// Observe hands sn on, one snapshot per stats bucket. A snapshot without
// Redis is skipped: the history would read its missing locks as gone. So
// is one of the same bucket as the last (a tick faster than a bucket):
// the history writes what a sample changed only when its time is past
// the last one written (history's holdArgs), so a second sample at the
// same time could end a hold that is never written. Limiter counts go on
// bucket by bucket (limiterSamples), so each counts once.
func (f *historyFeed) Observe(sn *live.Snapshot) {
	if f.h == nil {
		return
	}
	if s, ok := f.sample(sn); ok {
		f.h.Observe(f.ctx, s)
	}
}

// sample is what Observe hands on for sn; false when nothing.
func (f *historyFeed) sample(sn *live.Snapshot) (history.Sample, bool) {
	if sn == nil || !sn.RedisUp || sn.At <= f.lastAt {
		return history.Sample{}, false
	}
	first := f.lastAt == 0
	f.lastAt = sn.At
	s := history.Sample{At: time.UnixMilli(sn.At), Locks: make([]history.LockSample, 0, len(sn.Locks)),
		Limiters: f.limiterSamples(sn, first)}
	// One array for every lock's holders: at 10,000 locks a slice each
	// was 10,000 allocations a tick.
	n := 0
	for _, l := range sn.Locks {
		n += len(l.Holders)
	}
	holders := make([]history.Holder, 0, n)
	if f.waits == nil {
		f.waits = map[string]seenWaits{}
	}
	for _, l := range sn.Locks {
		var ls history.LockSample
		ls, holders = lockSample(sn, l, holders)
		ls.Wait = f.waitSample(sn, l.Name, first)
		s.Locks = append(s.Locks, ls)
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
func (f *historyFeed) waitSample(sn *live.Snapshot, name string, first bool) history.WaitSample {
	w := sn.Stats[name].Wait
	if w == nil {
		delete(f.waits, name)
		return history.WaitSample{}
	}
	seen := f.waits[name]
	f.waits[name] = seenWaits{total: w.Total, at: sn.At}
	if first {
		return history.WaitSample{}
	}
	prev := seen.total
	if w.Total.Acquired < prev.Acquired || w.Total.Count < prev.Count {
		prev = inspect.WaitTotals{}
	}
	out := history.WaitSample{Acquired: w.Total.Acquired - prev.Acquired, Contended: w.Total.Count - prev.Count,
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
func (f *historyFeed) limiterSamples(sn *live.Snapshot, first bool) []history.LimiterSample {
	if f.buckets == nil {
		f.buckets = map[string]seenBucket{}
	}
	var out []history.LimiterSample
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
			out = append(out, history.LimiterSample{Name: l.Name, Kind: string(l.Kind),
				Acquired: c.Acquired, Rejected: c.Rejected, Errors: c.Errors})
		}
	}
	return out
}

// lockSample is l with its holders' identities from the registry, kept in
// holders (returned grown). A lock whose node did not answer keeps the
// holders it was last read with.
func lockSample(sn *live.Snapshot, l inspect.LockInfo, holders []history.Holder) (history.LockSample, []history.Holder) {
	ls := history.LockSample{Name: l.Name, Kind: string(l.Kind), PTTL: l.PTTL, Waiters: l.WaitersTotal}
	if len(l.Holders) == 0 {
		return ls, holders
	}
	first := len(holders)
	for _, h := range l.Holders {
		hd := history.Holder{ID: h.ID}
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

// openHistory starts the history on the console's Redis, unless Config
// turns it off. Its goroutine outlives ctx's cancellation: runHistory
// closes it when the console stops, handing the writer lock back.
func (s *Server) openHistory(ctx context.Context) error {
	if s.cfg.historyOff() {
		return nil
	}
	h, err := history.Open(context.WithoutCancel(ctx), s.insp.Redis(), s.cfg.historyOptions())
	if err != nil {
		return err
	}
	s.histFeed.h, s.histFeed.ctx = h, ctx
	s.hist.Store(h)
	return nil
}

// stopHistory closes the history once runCtx ends (Close, or the ctx
// given to Open).
func (s *Server) stopHistory(runCtx context.Context) {
	h := s.hist.Load()
	if h == nil {
		return
	}
	<-runCtx.Done()
	ctx, cancel := context.WithTimeout(s.baseCtx, historyCloseTimeout)
	defer cancel()
	if err := h.Close(ctx); err != nil {
		s.log.Warn("closing the history", "err", err)
	}
}

// historyEnded records that the console ended holder's hold of lock name
// by force; the change itself is done, so a failure is only logged.
func (s *Server) historyEnded(ctx context.Context, name, holder string) {
	h := s.hist.Load()
	if h == nil {
		return
	}
	if err := h.Ended(ctx, name, holder, history.EndForceUnlocked); err != nil {
		s.log.Warn("recording a force-unlock in the history", "lock", name, "err", err)
	}
}

// forceUnlock runs admin's force-unlock for this request and, once the
// holder is gone, marks its hold as force-unlocked in the history. A lost
// race carries the lock's holders now.
func (s *Server) forceUnlock(c echo.Context, req admin.ForceUnlock) (admin.Unlocked, error) {
	res, err := s.admin.ForceUnlock(c.Request().Context(), s.actor(c), req)
	recorded(c)
	if err == nil {
		s.historyEnded(c.Request().Context(), req.Name, req.Holder)
	}
	if inspect.CodeOf(err) == inspect.CodeConflict && res.Holders != nil {
		err = withHolders(err, res.Holders)
	}
	return res, err
}

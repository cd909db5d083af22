package history

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store"
)

// worker is the History's goroutine and everything it owns.
type worker struct {
	h    *History
	t    *tracker
	sc   *store.Client
	lock *store.Lock

	writer  bool
	through int64 // ms: the newest sample time in Redis (meta "through")
	// inherited is "through" when this replica took over: how far the
	// writer before it wrote.
	inherited int64
	lastAt    int64 // ms: the newest sample observed
	lastE     int64 // the fine step of the newest sample
	lastTry   int64 // ms: the last attempt to become the writer

	// Known only while writing; rebuilt at every takeover.
	index   map[string]bool  // members of the index key
	touched map[string]int64 // ring key -> sample ms of its last allocation and expiry
	opened  map[string]bool  // locks whose running holds were replaced this term
	entryB  int64            // running sum of hold entry sizes, for the estimate
	entryN  int64
}

func (w *worker) run(ctx context.Context) {
	defer close(w.h.done)
	defer w.sc.Close()
	for {
		select {
		case <-ctx.Done():
			return // the lease lets another replica take over
		case m := <-w.h.msgs:
			switch {
			case m.sample != nil:
				w.sample(ctx, *m.sample)
			case m.ended != nil:
				w.t.end(m.ended.name, m.ended.holder, m.ended.how)
			case m.amend != nil:
				w.amend(ctx, m.amend)
			case m.flush != nil:
				m.flush <- w.flush(ctx, true)
			case m.close != nil:
				m.close <- w.release(ctx)
				return
			}
		}
	}
}

// amend records a in the tracker and, when the hold is already written
// (or this replica keeps no copy of it), in its lock's ended holds: the
// goroutine that flushes amends, so no write falls between the two.
func (w *worker) amend(ctx context.Context, a *amendReq) {
	c := w.t.amend(a.name, a.holder, a.at, a.how, a.worked)
	if c != nil && (c.closedAt > w.through || !w.writer) {
		return // the next write carries it
	}
	worked := "0"
	if a.worked {
		worked = "1"
	}
	err := holdAmend.Run(ctx, w.h.rdb, []string{HoldsKey(a.name)}, a.holder, a.at, a.how, worked).Err()
	if err != nil {
		w.h.setStats(func(s *Stats) { s.LastError = err.Error() })
	}
}

func (w *worker) sample(ctx context.Context, s Sample) {
	w.t.observe(s)
	at := s.At.UnixMilli()
	w.lastAt = max(w.lastAt, at)
	e := (at - 1) / FineStep.Milliseconds()
	if w.lastE != 0 && e > w.lastE {
		_ = w.flush(ctx, false) // the error is in Stats
	}
	w.lastE = max(w.lastE, e)
}

// flush writes when this replica is the writer; a reader tries to become
// it every Lease/3 (of sample time), or now when forced.
func (w *worker) flush(ctx context.Context, force bool) error {
	now := w.lastAt
	w.t.forget(now)
	var err error
	switch {
	case w.writer:
		if err = w.lock.Refresh(ctx); errors.Is(err, store.ErrNotHeld) {
			w.writer, err = false, nil
		}
	case force || now-w.lastTry >= (w.opt().lease/3).Milliseconds():
		w.lastTry = now
		err = w.takeover(ctx)
	}
	limTop, limOmit := w.t.topLimiters(now)
	lockTop, lockOmit := w.t.topLocks(now)
	// Nothing observed since the last write: nothing to send.
	if err == nil && w.writer && now > w.through {
		err = w.write(ctx, now, limTop, lockTop)
	}
	var readerSaw time.Time
	if err == nil && !w.writer {
		// A reader shows how far the writer has written.
		var ms int64
		if ms, err = w.h.rdb.HGet(ctx, MetaKey, "through").Int64(); err == nil {
			readerSaw = time.UnixMilli(ms)
		} else if errors.Is(err, redis.Nil) {
			err = nil
		}
	}
	w.h.setStats(func(s *Stats) {
		if !w.writer {
			s.LastFlush = readerSaw
		}
		s.Writer = w.writer
		s.LimitersKept, s.LimitersOmitted = len(limTop), limOmit
		s.LocksKept, s.LocksOmitted = len(lockTop), lockOmit
		s.Keys, s.BytesEstimate = w.estimate(len(limTop), len(lockTop), w.t.waiting(lockTop))
		if err != nil {
			s.LastError = err.Error()
		} else {
			s.LastError = ""
		}
	})
	return err
}

func (w *worker) opt() resolved { return w.t.opt }

// takeover tries the writer lock; on success it learns what the last
// writer left: how far it wrote and which objects it kept.
func (w *worker) takeover(ctx context.Context) error {
	err := w.lock.TryLock(ctx)
	if errors.Is(err, store.ErrNotObtained) {
		return nil
	}
	if err != nil {
		return err
	}
	w.writer = true
	w.index, w.touched, w.opened = map[string]bool{}, map[string]int64{}, map[string]bool{}
	pipe := w.h.rdb.Pipeline()
	through := pipe.HGet(ctx, MetaKey, "through")
	members := pipe.ZRangeWithScores(ctx, IndexKey, 0, -1)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		w.writer = false
		_ = w.lock.Unlock(ctx)
		return err
	}
	w.through, _ = through.Int64()
	w.inherited = w.through
	at := w.through
	if at <= 0 {
		at = w.lastAt
	}
	for _, z := range members.Val() {
		m := z.Member.(string)
		w.index[m] = true
		for _, kind := range []string{memberLimiter, memberLock} {
			if name, ok := strings.CutPrefix(m, kind); ok {
				w.t.seed(kind, name, z.Score, at, w.lastAt)
			}
		}
	}
	return holdWrite.Load(ctx, w.h.rdb).Err()
}

// release gives the writer lock back so another replica takes over at once.
func (w *worker) release(ctx context.Context) error {
	if !w.writer {
		return nil
	}
	w.writer = false
	w.h.setStats(func(s *Stats) { s.Writer = false })
	if err := w.lock.Unlock(ctx); err != nil && !errors.Is(err, store.ErrNotHeld) {
		return err
	}
	return nil
}

// estimate is the history's Redis footprint in keys and bytes: rings at
// their full length (a wait ring for each of waiting kept locks that saw an
// acquisition), hold lists full at the average entry seen; about 90 bytes
// of per-key overhead (dict entry, key, object, expiry).
func (w *worker) estimate(limiters, locks, waiting int) (keys int, bytes int64) {
	const perKey = 90
	o := w.opt()
	ring := func(n, size int) int64 { return int64(n*size+1) + perKey }
	entry := int64(64)
	if w.entryN > 0 {
		entry = w.entryB / w.entryN
	}
	keys = 2*limiters + 2*locks + waiting + 3
	bytes = int64(limiters)*(ring(o.nFine, recordSize)+ring(o.nCoarse, recordSize)) +
		int64(locks)*(2*perKey+int64(o.holds+1)*(entry+11)) + int64(waiting)*ring(o.nCoarse, waitRecordSize)
	return keys, bytes
}

package history

import (
	"math"
	"slices"
	"strings"
	"time"
)

// The tracker is the goroutine's own view of every object: recent limiter
// steps, lock holds, busyness scores. Every replica keeps one from the same
// samples, so a replica that becomes the writer already has the steps the
// last writer may not have flushed.

type counts struct{ acq, rej, errs int64 }

func (c counts) zero() bool { return c == counts{} }

func (c *counts) add(o counts) { c.acq += o.acq; c.rej += o.rej; c.errs += o.errs }

// step is the counts of one 10 s step, e its index (Unix ms / 10 s).
type step struct {
	e int64
	c counts
}

type limiter struct {
	score    float64
	scoredAt int64 // ms
	seenAt   int64 // ms
	recent   []step
}

// at returns the recent slot of fine step e (reset when it held another).
func (l *limiter) at(e int64) *step {
	s := &l.recent[int(e%int64(len(l.recent)))]
	if s.e != e {
		*s = step{e: e}
	}
	return s
}

// minute sums the recent steps of coarse step m.
func (l *limiter) minute(m int64) counts {
	var c counts
	per := int64(CoarseStep / FineStep)
	for _, s := range l.recent {
		if s.e/per == m {
			c.add(s.c)
		}
	}
	return c
}

type openHold struct {
	h    Holder
	from int64 // ms
}

type closedHold struct {
	h        Holder
	from, to int64
	ended    string
	closedAt int64 // the sample that closed it: flushes write those after their "through"
	workedTo int64 // ms: its holder heard working on it past to (amend); 0: not
}

type lock struct {
	score    float64
	scoredAt int64
	seenAt   int64
	present  bool
	pttl     int64      // ms at seenAt; negative: no lease
	open     []openHold // running holds, in the order they began
	// ending holds vanished at the last sample; the next one says
	// whether another holder took over.
	ending []closedHold
	closed []closedHold
	// openDirty says the running holds changed since the last write.
	openDirty bool
	forced    map[string]string // holder -> how the console ended it
	gen       int64             // the last sample that listed the lock
	// waits are the recent minutes of waits (addWait), nil until the
	// lock's first acquisition.
	waits []waitMinute
}

type tracker struct {
	opt      resolved
	limiters map[string]*limiter
	locks    map[string]*lock
	lockList []*lock // the same locks, for walking them every sample
	recentN  int
	waitN    int   // recent wait minutes a lock keeps
	keepMS   int64 // how long closed holds wait for a writer
	gen      int64 // samples seen
	firstAt  int64 // ms: the first sample; steps that began before it were seen in part
}

func newTracker(opt resolved) *tracker {
	// A reader keeps what a writer that vanished may not have flushed:
	// a lease, the takeover attempt period, and a flush period either side.
	keep := opt.lease + opt.lease/3 + 2*FineStep
	n := int(keep/FineStep) + 1 + int(CoarseStep/FineStep)
	return &tracker{opt: opt, limiters: map[string]*limiter{}, locks: map[string]*lock{},
		recentN: n, waitN: int(keep/CoarseStep) + 2, keepMS: keep.Milliseconds()}
}

// decay brings a score kept at since forward to now.
func (t *tracker) decay(score float64, since, now int64) float64 {
	if t.opt.half <= 0 || now <= since {
		return score
	}
	return score * math.Exp2(-float64(now-since)/float64(t.opt.half.Milliseconds()))
}

func (t *tracker) observe(s Sample) {
	now := s.At.UnixMilli()
	if t.firstAt == 0 {
		t.firstAt = now
	}
	e := (now - 1) / FineStep.Milliseconds() // a slice ending at At belongs to the step it ends in
	for _, ls := range s.Limiters {
		c := counts{ls.Acquired, ls.Rejected, ls.Errors}
		if c.zero() {
			continue
		}
		l := t.limiters[ls.Name]
		if l == nil {
			l = t.newLimiter(now)
			t.limiters[ls.Name] = l
		}
		l.at(e).c.add(c)
		l.score = t.decay(l.score, l.scoredAt, now) + float64(c.acq+c.rej+c.errs)
		l.scoredAt, l.seenAt = now, now
	}
	t.gen++
	for i := range s.Locks {
		ls := &s.Locks[i]
		l := t.locks[ls.Name]
		if l == nil {
			l = t.addLock(ls.Name, now)
		}
		l.gen = t.gen
		t.observeLock(l, now, ls.Holders, ls.PTTL, ls.Waiters)
		if !ls.Wait.zero() {
			t.addWait(l, now, &ls.Wait)
		}
	}
	for _, l := range t.lockList {
		if l.gen != t.gen && (l.present || len(l.ending) > 0) {
			t.observeLock(l, now, nil, -1, 0)
		}
		if len(l.closed) > 0 {
			t.trimClosed(l, now)
		}
	}
}

// observeLock follows one lock from its last sample to this one.
func (t *tracker) observeLock(l *lock, now int64, holders []Holder, pttl time.Duration, waiters int64) {
	dt := float64(max(now-l.seenAt, 0)) / 1000
	if len(l.ending) == 0 && sameHolders(l.open, holders) {
		// The common tick: nothing changed hands.
		l.present, l.pttl = true, pttlMS(pttl)
		if waiters > 0 {
			l.score = t.decay(l.score, l.scoredAt, now) + float64(waiters)*dt
			l.scoredAt = now
		}
		l.seenAt = now
		return
	}
	changes := 0
	taken := false // a holder appeared
	// Split the running holds into those still held and those gone (a
	// holder that left and came back between two samples is one hold: the
	// samples cannot tell).
	kept := l.open[:0:0]
	for _, o := range l.open {
		if slices.ContainsFunc(holders, func(h Holder) bool { return h.ID == o.h.ID }) {
			kept = append(kept, o)
		}
	}
	gone := l.open
	l.open = kept
	for _, h := range holders {
		if slices.ContainsFunc(l.open, func(o openHold) bool { return o.h.ID == h.ID }) {
			continue
		}
		from := now
		if !h.Since.IsZero() && h.Since.UnixMilli() <= now {
			from = h.Since.UnixMilli()
		}
		l.open = append(l.open, openHold{h: h, from: from})
		l.openDirty, taken = true, true
		changes++
	}
	// Holds that vanished at the last sample are settled now, and are
	// closed by this sample: a flush between the two samples wrote
	// "through" past the last one, and holdArgs writes only holds closed
	// after it.
	for _, c := range l.ending {
		if taken && c.ended == EndReleased {
			c.ended = EndHandedOff
		}
		c.closedAt = now
		l.closed = append(l.closed, c)
	}
	l.ending = l.ending[:0]
	for _, o := range gone {
		id := o.h.ID
		if slices.ContainsFunc(holders, func(h Holder) bool { return h.ID == id }) {
			continue
		}
		c := closedHold{h: o.h, from: o.from, to: now, ended: EndReleased, closedAt: now}
		if l.present && l.pttl >= 0 && now-l.seenAt >= l.pttl {
			c.ended, c.to = EndExpired, max(l.seenAt+l.pttl, o.from)
		}
		if how, ok := l.forced[id]; ok {
			c.ended = how
			delete(l.forced, id)
		}
		l.openDirty = true
		changes++
		if c.ended == EndReleased && taken {
			c.ended = EndHandedOff
		}
		if c.ended == EndReleased {
			l.ending = append(l.ending, c)
		} else {
			l.closed = append(l.closed, c)
		}
	}
	l.present = holders != nil || pttl >= 0
	l.pttl = pttlMS(pttl)
	if changes > 0 || waiters > 0 {
		l.score = t.decay(l.score, l.scoredAt, now) + float64(changes) + float64(waiters)*dt
		l.scoredAt = now
	}
	l.seenAt = now
}

// pttlMS is a lease in ms, -1 for none.
func pttlMS(pttl time.Duration) int64 {
	if pttl < 0 {
		return -1
	}
	return pttl.Milliseconds()
}

// sameHolders reports whether holders are exactly the running holds.
func sameHolders(open []openHold, holders []Holder) bool {
	if len(open) != len(holders) || len(holders) == 0 {
		return false
	}
	for _, h := range holders {
		if !slices.ContainsFunc(open, func(o openHold) bool { return o.h.ID == h.ID }) {
			return false
		}
	}
	return true
}

// trimClosed forgets ended holds no writer can still need.
func (t *tracker) trimClosed(l *lock, now int64) {
	i := 0
	for i < len(l.closed) && l.closed[i].closedAt < now-t.keepMS {
		i++
	}
	if extra := len(l.closed) - i - 2*max(t.opt.holds, 1); extra > 0 {
		i += extra
	}
	l.closed = l.closed[i:]
}

// end records that the console ended holder's hold of name (a
// force-unlock), for when the hold is seen gone.
func (t *tracker) end(name, holder, how string) {
	l := t.locks[name]
	if l == nil {
		return
	}
	for i := range l.closed {
		if c := &l.closed[i]; c.h.ID == holder && c.ended != how {
			c.ended = how
		}
	}
	for i := range l.ending {
		if c := &l.ending[i]; c.h.ID == holder {
			c.ended = how
		}
	}
	if slices.ContainsFunc(l.open, func(o openHold) bool { return o.h.ID == holder }) {
		if l.forced == nil {
			l.forced = map[string]string{}
		}
		l.forced[holder] = how
	}
}

// amend records what was heard of holder's newest hold of name begun by
// at (ms), once it ended: how it ended when how is not "", and that its
// holder worked on until at when worked. It returns the hold amended, nil
// when the tracker keeps no such hold; a running hold is marked for when
// it is seen gone (how only).
func (t *tracker) amend(name, holder string, at int64, how string, worked bool) *closedHold {
	l := t.locks[name]
	if l == nil {
		return nil
	}
	var c *closedHold
	for i := len(l.ending) - 1; i >= 0 && c == nil; i-- {
		if e := &l.ending[i]; e.h.ID == holder && e.from <= at {
			c = e
		}
	}
	for i := len(l.closed) - 1; i >= 0 && c == nil; i-- {
		if e := &l.closed[i]; e.h.ID == holder && e.from <= at {
			c = e
		}
	}
	if c == nil {
		if how != "" && slices.ContainsFunc(l.open, func(o openHold) bool { return o.h.ID == holder }) {
			if l.forced == nil {
				l.forced = map[string]string{}
			}
			l.forced[holder] = how
		}
		return nil
	}
	if how != "" {
		c.ended = how
	}
	if worked && at > c.to {
		c.workedTo = at
	}
	return c
}

// ranking is one kept object and its score at the flush.
type ranking struct {
	name  string
	score float64
}

// ranked returns the top busiest objects by decayed score at now (ties by
// name, so replicas agree), and how many were left out.
func ranked[T any](t *tracker, m map[string]*T, score func(*T) (float64, int64), now int64) (top []ranking, omitted int) {
	all := make([]ranking, 0, len(m))
	for name, o := range m {
		s, at := score(o)
		if s = t.decay(s, at, now); s > 1e-9 {
			all = append(all, ranking{name, s})
		}
	}
	slices.SortFunc(all, func(a, b ranking) int {
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	n := min(len(all), t.opt.top)
	return all[:n:n], len(all) - n
}

func (t *tracker) topLimiters(now int64) ([]ranking, int) {
	return ranked(t, t.limiters, func(l *limiter) (float64, int64) { return l.score, l.scoredAt }, now)
}

func (t *tracker) topLocks(now int64) ([]ranking, int) {
	return ranked(t, t.locks, func(l *lock) (float64, int64) { return l.score, l.scoredAt }, now)
}

func (t *tracker) newLimiter(now int64) *limiter {
	return &limiter{recent: make([]step, t.recentN), scoredAt: now, seenAt: now}
}

func (t *tracker) addLock(name string, now int64) *lock {
	l := &lock{scoredAt: now, seenAt: now}
	t.locks[name] = l
	t.lockList = append(t.lockList, l)
	return l
}

// seed takes the score the last writer kept for an object (at time at),
// so that a replica that just started does not rank the history it takes
// over below what it saw in its first seconds, and delete it.
func (t *tracker) seed(kind, name string, score float64, at, now int64) {
	switch kind {
	case memberLimiter:
		l := t.limiters[name]
		if l == nil {
			l = t.newLimiter(now)
			t.limiters[name] = l
		}
		if t.decay(l.score, l.scoredAt, at) < score {
			l.score, l.scoredAt = score, at
		}
	case memberLock:
		l := t.locks[name]
		if l == nil {
			l = t.addLock(name, now)
		}
		if t.decay(l.score, l.scoredAt, at) < score {
			l.score, l.scoredAt = score, at
		}
	}
}

// forget drops objects idle for longer than the coarse retention, so the
// tracker's memory follows the objects that exist.
func (t *tracker) forget(now int64) {
	limit := now - t.opt.coarse.Milliseconds()
	for name, l := range t.limiters {
		if l.seenAt < limit {
			delete(t.limiters, name)
		}
	}
	kept := t.lockList[:0]
	for name, l := range t.locks {
		if l.seenAt < limit && len(l.open) == 0 {
			delete(t.locks, name)
		} else {
			kept = append(kept, l)
		}
	}
	clear(t.lockList[len(kept):])
	t.lockList = kept
}

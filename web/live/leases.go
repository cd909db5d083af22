package live

import (
	"slices"
	"sync"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/events"
)

// Lease safety: holds that ended without their holder's release while
// the holder went on working, so two holders may have been in the
// critical section at once. The sampler follows each lock's holders from
// tick to tick (the reads it already makes) and settles every hold that
// vanished once the unlock message it may still be waiting for had time
// to arrive (expiryGrace): released (a message was heard), force-unlocked
// (the console's own event), evicted (a keyspace notification) or
// expired (no message, and the last lease seen had run out by the sample
// that missed it). The late releases and renewals the lock scripts record
// in the call that refuses them (inspect.LateRelease) come from the
// lock's stats ring, read with the lock, and from its late channel.

// Violation kinds.
const (
	// ViolationExpiredWhileWorking: a hold ran out, not released, while
	// its client still beat in the registry, and another holder took it.
	ViolationExpiredWhileWorking = "expired-while-working"
	// ViolationReleasedAfterExpiry: a release or renewal arrived for a
	// hold that had already ended.
	ViolationReleasedAfterExpiry = "released-after-expiry"
	// ViolationRenewedAfterRelease: a renewal arrived for a hold its own
	// holder had released (a watchdog that outlived the unlock).
	ViolationRenewedAfterRelease = "renewed-after-release"
	// ViolationEvicted: Redis evicted the key of a held lock (maxmemory).
	ViolationEvicted = "evicted"
)

// ViolationKinds lists the kinds, in the order pages and metrics show them.
var ViolationKinds = []string{ViolationExpiredWhileWorking, ViolationReleasedAfterExpiry,
	ViolationRenewedAfterRelease, ViolationEvicted}

// Hold ends as the console tells them (web/history names them alike).
const (
	EndReleased = "released"
	EndExpired  = "expired"
	EndForced   = "force-unlocked"
	EndEvicted  = "evicted"
)

// ViolationClient is a registered client's identity.
type ViolationClient struct {
	App  string `json:"app"`
	Host string `json:"host"`
	PID  int    `json:"pid"`
}

// LeaseViolation is one hold whose exclusion may have been broken.
type LeaseViolation struct {
	Lock   string `json:"lock"`
	Kind   string `json:"kind"`
	Holder string `json:"holder"`
	// Client is the holder's registered client; nil when it registered
	// none (Redisson, a token).
	Client     *ViolationClient `json:"client"`
	NextHolder string           `json:"next_holder"`
	NextClient *ViolationClient `json:"next_client"`
	// At is when it happened: the hold's end for an expiry or eviction,
	// the refusal for a late release or renewal (Redis time).
	At time.Time `json:"at"`
	// LateMS is how long after the hold's end a late release or renewal
	// came (at least: a lower bound when the end is known only by the
	// next holder's grant); 0 for the other kinds.
	LateMS int64 `json:"late_ms"`
	// Probable marks what the layout cannot prove (a holder that is not a
	// registered store client); Reason says why it is reported.
	Probable bool   `json:"probable,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// Bounds of the detector's memory.
const (
	maxViolations = 1000
	// ViolationsKept is how long a violation stays listed.
	ViolationsKept = 24 * time.Hour
	// endedKept is how long an ended hold waits for its next holder and
	// is remembered for the late release that may follow.
	endedKept = 10 * time.Minute
	maxEnded  = 10000
	maxLate   = 10000
)

// seenHold is a holder as the last sample that listed it saw it.
type seenHold struct {
	tick    time.Time     // local start of that tick
	sampled time.Time     // its Redis time
	pttl    time.Duration // the lock's lease then
}

// endedHold is a hold that vanished, settled or waiting to be.
type endedHold struct {
	lock, holder string
	seen         seenHold
	missedAt     time.Time // Redis time of the sample that missed it
	ticks        int       // ticks since, while unsettled
	how          string    // "" until settled
	end          time.Time // the expiry's end (seen.sampled + pttl)
	next         bool      // a next holder was found (or none is awaited)
}

// lockHeard is what the event log said of one lock recently.
type lockHeard struct {
	unlock, evicted time.Time
	forced          map[string]time.Time // holder -> when
}

// leaseWatch is the sampler's detector: its state belongs to the run
// goroutine, its findings (list, counts) are read by requests.
type leaseWatch struct {
	holds map[string]map[string]seenHold // lock -> holder
	ended []*endedHold                   // oldest first
	heard map[string]*lockHeard
	late  map[string]time.Time // lock \x00 holder \x00 op -> newest At reported

	mu     sync.Mutex
	list   []LeaseViolation // oldest first; replaced, never changed in place
	counts map[string]int64
	total  int64 // violations reported since the start
}

// hear takes the events the log got since the last tick.
func (w *leaseWatch) hear(evs []events.Entry, reg *inspect.Registry) {
	for _, e := range evs {
		switch e.Type {
		case inspect.EventLate:
			if e.Late != nil {
				w.lateRecord(*e.Late, reg)
			}
			continue
		case inspect.EventExpired:
			continue // the sampler's own finding, not a message
		}
		if w.heard == nil {
			w.heard = map[string]*lockHeard{}
		}
		h := w.heard[e.Name]
		if h == nil {
			h = &lockHeard{}
			w.heard[e.Name] = h
		}
		at := e.At
		switch e.Type {
		case inspect.EventEvicted:
			h.evicted = at
		case inspect.EventForceUnlock:
			if h.forced == nil {
				h.forced = map[string]time.Time{}
			}
			h.forced[e.Holder] = at
		default:
			h.unlock = at
		}
	}
}

// observe follows the holders of smp's locks from the last sample.
func (w *leaseWatch) observe(smp *inspect.Sample, reg *inspect.Registry, start time.Time) {
	if w.holds == nil {
		w.holds = map[string]map[string]seenHold{}
	}
	listed := make(map[string]*inspect.LockInfo, len(smp.Locks))
	for i := range smp.Locks {
		l := &smp.Locks[i]
		listed[l.Name] = l
		for _, lr := range smp.Stats[l.Name].Late {
			w.lateRecord(lr, reg)
		}
	}
	for name, holders := range w.holds {
		if _, unread := smp.Unreadable[name]; unread {
			continue
		}
		l := listed[name]
		for id, sh := range holders {
			if l != nil && slices.ContainsFunc(l.Holders, func(h inspect.Holder) bool { return h.ID == id }) {
				continue
			}
			delete(holders, id)
			if len(w.ended) < maxEnded {
				w.ended = append(w.ended, &endedHold{lock: name, holder: id, seen: sh, missedAt: smp.TimeOf(name)})
			}
		}
		if len(holders) == 0 {
			delete(w.holds, name)
		}
	}
	for name, l := range listed {
		if len(l.Holders) == 0 {
			continue
		}
		hs := w.holds[name]
		if hs == nil {
			hs = make(map[string]seenHold, len(l.Holders))
			w.holds[name] = hs
		}
		for _, h := range l.Holders {
			hs[h.ID] = seenHold{tick: start, sampled: smp.TimeOf(name), pttl: l.PTTL}
		}
	}
	w.settle(listed, reg, smp.At)
}

// settle names how the vanished holds ended, once their unlock message
// had time to arrive, and reports those that broke exclusion.
func (w *leaseWatch) settle(listed map[string]*inspect.LockInfo, reg *inspect.Registry, now time.Time) {
	keep := w.ended[:0]
	for _, e := range w.ended {
		if e.how == "" {
			if e.ticks < expiryGrace {
				e.ticks++
				keep = append(keep, e)
				continue
			}
			e.how = w.howEnded(e)
			if e.how == EndEvicted {
				w.report(violationOf(e, ViolationEvicted, e.missedAt, reg, listed[e.lock]))
			}
			e.next = e.how != EndExpired
		}
		if !e.next {
			if l := listed[e.lock]; l != nil && slices.ContainsFunc(l.Holders, func(h inspect.Holder) bool { return h.ID != e.holder }) {
				e.next = true
				if v, ok := expiredWhileWorking(e, reg, l); ok {
					w.report(v)
				}
			}
		}
		if now.Sub(e.missedAt) < endedKept {
			keep = append(keep, e)
		}
	}
	clear(w.ended[len(keep):])
	w.ended = keep
	for name, h := range w.heard {
		if time.Since(h.unlock) > time.Minute && time.Since(h.evicted) > time.Minute {
			for id, at := range h.forced {
				if time.Since(at) > time.Minute {
					delete(h.forced, id)
				}
			}
			if len(h.forced) == 0 {
				delete(w.heard, name)
			}
		}
	}
}

// howEnded settles a vanished hold from what was heard since the tick
// that last saw it, and its lease.
func (w *leaseWatch) howEnded(e *endedHold) string {
	if h := w.heard[e.lock]; h != nil {
		if at, ok := h.forced[e.holder]; ok && !at.Before(e.seen.tick) {
			return EndForced
		}
		if h.evicted.After(e.seen.tick) {
			return EndEvicted
		}
		if h.unlock.After(e.seen.tick) {
			return EndReleased
		}
	}
	if e.seen.pttl >= 0 && e.missedAt.Sub(e.seen.sampled) >= e.seen.pttl {
		e.end = e.seen.sampled.Add(e.seen.pttl)
		return EndExpired
	}
	// Gone before its lease ran out with no message: a delete by a client
	// that does not publish (a token lock's compare-and-delete).
	return EndReleased
}

// expiredWhileWorking is e's violation, if its holder was still alive
// when another took the lock: certain for a registered client still
// beating, probable for a holder that registered none.
func expiredWhileWorking(e *endedHold, reg *inspect.Registry, next *inspect.LockInfo) (LeaseViolation, bool) {
	v := violationOf(e, ViolationExpiredWhileWorking, e.end, reg, next)
	ci, ok := reg.Lookup(e.holder)
	switch {
	case ok && ci.Gone():
		return v, false // its client died: the lease did its job
	case !ok:
		v.Probable = true
		v.Reason = "the holder is not a registered store client: its hold ran out with no release heard and another took the lock; whether it still worked is not known"
	}
	return v, true
}

func violationOf(e *endedHold, kind string, at time.Time, reg *inspect.Registry, next *inspect.LockInfo) LeaseViolation {
	v := LeaseViolation{Lock: e.lock, Kind: kind, Holder: e.holder, Client: clientOf(reg, e.holder), At: at}
	if next != nil {
		for _, h := range next.Holders {
			if h.ID != e.holder {
				v.NextHolder, v.NextClient = h.ID, clientOf(reg, h.ID)
				break
			}
		}
	}
	return v
}

func clientOf(reg *inspect.Registry, holder string) *ViolationClient {
	ci, ok := reg.Lookup(holder)
	if !ok {
		return nil
	}
	return &ViolationClient{App: ci.App, Host: ci.Host, PID: ci.PID}
}

// lateRecord reports a late release or renewal the first time it is seen
// (the same record is read from the ring every tick and heard once).
func (w *leaseWatch) lateRecord(lr inspect.LateRelease, reg *inspect.Registry) {
	key := lr.Lock + "\x00" + lr.Holder + "\x00" + lr.Op
	if prev, ok := w.late[key]; ok && !lr.At.After(prev) {
		return
	}
	if w.late == nil {
		w.late = map[string]time.Time{}
	}
	if len(w.late) >= maxLate {
		for k, at := range w.late {
			if time.Since(at) > ViolationsKept {
				delete(w.late, k)
			}
		}
		if len(w.late) >= maxLate {
			return
		}
	}
	w.late[key] = lr.At
	v := LeaseViolation{Lock: lr.Lock, Kind: ViolationReleasedAfterExpiry, Holder: lr.Holder, Client: clientOf(reg, lr.Holder),
		NextHolder: lr.Next, NextClient: clientOf(reg, lr.Next), At: lr.At}
	var ended *endedHold
	for i := len(w.ended) - 1; i >= 0; i-- {
		if e := w.ended[i]; e.lock == lr.Lock && e.holder == lr.Holder {
			ended = w.ended[i]
			break
		}
	}
	switch {
	case ended != nil && ended.how == EndReleased && lr.Op == inspect.LateRenewOp:
		v.Kind = ViolationRenewedAfterRelease
		v.LateMS = max(0, lr.At.Sub(ended.missedAt).Milliseconds())
	case ended != nil && ended.how == EndExpired:
		v.LateMS = max(0, lr.At.Sub(ended.end).Milliseconds())
	case !lr.NextSince.IsZero():
		v.LateMS = max(0, lr.At.Sub(lr.NextSince).Milliseconds())
	}
	w.report(v)
}

// report lists v and counts it.
func (w *leaseWatch) report(v LeaseViolation) {
	w.mu.Lock()
	defer w.mu.Unlock()
	cut := 0
	for cut < len(w.list) && time.Since(w.list[cut].At) > ViolationsKept {
		cut++
	}
	cut = max(cut, len(w.list)+1-maxViolations)
	list := make([]LeaseViolation, 0, len(w.list)-cut+1)
	list = append(list, w.list[cut:]...)
	w.list = append(list, v)
	if w.counts == nil {
		w.counts = map[string]int64{}
	}
	w.counts[v.Kind]++
	w.total++
}

// snapshot is the list as it is now (never changed afterwards), and how
// many were reported since the start.
func (w *leaseWatch) snapshot() ([]LeaseViolation, int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.list, w.total
}

// LeaseViolations are the violations of the last ViolationsKept, oldest
// first.
func (sm *Sampler) LeaseViolations() []LeaseViolation {
	list, _ := sm.leases.snapshot()
	return list
}

// LeaseViolationCounts are the violations found since the start, by kind.
func (sm *Sampler) LeaseViolationCounts() map[string]int64 {
	sm.leases.mu.Lock()
	defer sm.leases.mu.Unlock()
	out := make(map[string]int64, len(ViolationKinds))
	for _, k := range ViolationKinds {
		out[k] = sm.leases.counts[k]
	}
	return out
}

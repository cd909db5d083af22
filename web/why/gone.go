package why

import (
	"fmt"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect/clients"
	"github.com/lockwarden/lockwarden/web/history"
	"github.com/lockwarden/lockwarden/web/live"
)

// GoneInput is what the console remembers of a name it no longer lists.
type GoneInput struct {
	Name string
	Now  time.Time
	// Gone is the live layer's memory of it (live.Sampler.Gone); nil when
	// it has none (a console started since, or more than an hour ago).
	Gone *live.Gone
	// Holds are the history's holds of the lock over the last hour
	// (history.LockHistory.Holds: running ones first, then ended ones
	// newest first); nil when the history keeps none for it.
	Holds []history.Hold
	// Violations are the lock's lease violations (live.Snapshot's), oldest
	// first; Deadlocks the cycles it was part of that ended, newest first.
	Violations []live.LeaseViolation
	Deadlocks  []live.EndedDeadlock
}

// Known says whether in has anything to answer with; without it the
// name is one the console has not seen (a 404).
func (in GoneInput) Known() bool {
	return in.Gone != nil || lastEnded(in.Holds) != nil || len(in.Violations) > 0 || len(in.Deadlocks) > 0
}

// Gone answers for a name the console listed within the last hour and
// no longer lists: a lock that is free now, or a limiter whose key went.
func Gone(in GoneInput) Answer {
	if in.Gone != nil && !in.Gone.Lock {
		return goneLimiter(in)
	}
	kind := ""
	if in.Gone != nil {
		kind = string(in.Gone.Kind)
	}
	b := newBuilder(in.Name, kind, StateFree)
	if kind != "" {
		b.fact("kind", kind)
	}
	last := lastEnded(in.Holds)
	since := time.Time{}
	switch {
	case in.Gone != nil:
		since = in.Gone.At
	case last != nil:
		since = last.To
	}
	if since.IsZero() {
		// Known only by its lease violations or past deadlocks.
		b.say(fmt.Sprintf("Nobody holds %s now.", in.Name))
	} else {
		b.say(fmt.Sprintf("Nobody holds %s now: it has been free since %s (%s ago).", in.Name, clock(since, in.Now), dur(in.Now.Sub(since).Milliseconds())))
		b.fact("free_since_at", since.UTC().Format(time.RFC3339))
	}
	if g := in.Gone; g != nil && len(g.Holders) > 0 {
		h := g.Holders[0]
		s := "It was last held by " + who(h.Who, h.ID)
		if h.HeldMS > 0 {
			s = "It was last held by " + aside(who(h.Who, h.ID)) + " for at least " + dur(h.HeldMS)
		}
		if len(g.Holders) > 1 {
			s += fmt.Sprintf(", with %d other holders", len(g.Holders)-1)
		}
		b.say(s + ".")
		b.fact("last_holder", h.ID)
		b.fact("last_held_by", who(h.Who, h.ID))
		if g.WaitersTotal > 0 {
			b.say(fmt.Sprintf("%s waiting for it then.", upper(plural(g.WaitersTotal, "client was", "clients were"))))
		}
	} else if last != nil {
		b.say("It was last held by " + holdWho(*last) + ".")
		b.fact("last_holder", last.Holder)
		b.fact("last_held_by", holdWho(*last))
	}
	leaseSafetySay(b, in, last)
	return b.done()
}

// leaseSafetySay says how the last hold ended, as far as the history
// recorded it (released, handed off, force-unlocked, expired), whether
// exclusion may have been broken (the lease violations live found) and
// the deadlock the lock was last part of, with how long it lasted.
func leaseSafetySay(b *builder, in GoneInput, last *history.Hold) {
	if last != nil {
		b.fact("last_hold_ended", last.Ended)
		b.fact("last_hold_from_at", last.From.UTC().Format(time.RFC3339))
		s := fmt.Sprintf("Its last recorded hold, by %s, lasted %s from %s", holdWho(*last), dur(last.To.Sub(last.From).Milliseconds()), clock(last.From, in.Now))
		switch last.Ended {
		case history.EndExpired:
			s += ", and ended when its lease ran out while it was held"
		case history.EndForceUnlocked:
			s += ", and was force-unlocked from the console"
		case history.EndHandedOff:
			s += ", and was handed to the next waiter"
		case history.EndReleased:
			s += ", and was released by its holder"
		case history.EndEvicted:
			s += ", and ended when Redis evicted its key (maxmemory) while it was held"
		}
		b.say(s + ".")
	}
	if n := len(in.Violations); n > 0 {
		v := in.Violations[n-1]
		b.fact("lease_violations", fmt.Sprint(n))
		b.fact("last_violation", v.Kind)
		s := fmt.Sprintf("Exclusion may have been broken: %s at %s, by %s", v.Kind, clock(v.At, in.Now), violationWho(v.Holder, v.Client))
		if v.NextHolder != "" {
			s += " while " + violationWho(v.NextHolder, v.NextClient) + " held it"
		}
		if v.LateMS > 0 {
			s += fmt.Sprintf(", %s after its hold had ended", dur(v.LateMS))
		}
		if n > 1 {
			s += fmt.Sprintf(" (%s in the last day)", plural(int64(n), "violation", "violations"))
		}
		b.say(s + ".")
	}
	if len(in.Deadlocks) > 0 {
		d := in.Deadlocks[0]
		b.fact("last_deadlock_ms", fmt.Sprint(d.Ended.Sub(d.Since).Milliseconds()))
		b.say(fmt.Sprintf("It was in a deadlock of %d holders from %s for %s, until %s.", len(d.Cycle), clock(d.Since, in.Now),
			dur(d.Ended.Sub(d.Since).Milliseconds()), clock(d.Ended, in.Now)))
	}
}

// violationWho names a violation's holder by its client when registered.
func violationWho(holder string, c *live.ViolationClient) string {
	if c == nil || c.App == "" {
		return holder
	}
	return clientWho(c.App, c.Host, c.PID, holder)
}

// clientWho names a holder by its client and, since one process's holds
// differ only by it, its owner: "orders-api on host-7 (pid 4211), owner 77".
func clientWho(app, host string, pid int, holder string) string {
	s := fmt.Sprintf("%s on %s (pid %d)", app, host, pid)
	if o := clients.OwnerOf(holder); o != "" {
		s += ", owner " + o
	}
	return s
}

// lastEnded is the newest ended hold of holds.
func lastEnded(holds []history.Hold) *history.Hold {
	for i := range holds {
		if !holds[i].To.IsZero() {
			return &holds[i]
		}
	}
	return nil
}

// holdWho names the client of a hold in the history.
func holdWho(h history.Hold) string {
	if h.Client == nil || h.Client.App == "" {
		return h.Holder
	}
	return clientWho(h.Client.App, h.Client.Host, h.Client.PID, h.Holder)
}

func goneLimiter(in GoneInput) Answer {
	g := in.Gone
	b := newBuilder(in.Name, string(g.Kind), StateGone)
	b.fact("kind", string(g.Kind))
	b.fact("gone_at", g.At.UTC().Format(time.RFC3339))
	s := fmt.Sprintf("%s is gone: its key went at %s (%s ago)", in.Name, clock(g.At, in.Now), dur(in.Now.Sub(g.At).Milliseconds()))
	if g.Kind == "counter" {
		s += "; a counter's key goes when its window ends, and the next hit starts it over"
	}
	b.say(s + ".")
	return b.done()
}

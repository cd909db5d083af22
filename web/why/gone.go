package why

import (
	"fmt"
	"time"

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
}

// Known says whether in has anything to answer with; without it the
// name is one the console has not seen (a 404).
func (in GoneInput) Known() bool { return in.Gone != nil || lastEnded(in.Holds) != nil }

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
	b.say(fmt.Sprintf("Nobody holds %s now: it has been free since %s (%s ago).", in.Name, clock(since, in.Now), dur(in.Now.Sub(since).Milliseconds())))
	b.fact("free_since_at", since.UTC().Format(time.RFC3339))
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
// recorded it (released, handed off, force-unlocked, expired). Facts on
// lease safety (an expiry while the holder still worked, a release that
// came after the hold ended) belong here, beside "last_hold_ended".
func leaseSafetySay(b *builder, in GoneInput, last *history.Hold) {
	if last == nil {
		return
	}
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
	}
	b.say(s + ".")
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
	return fmt.Sprintf("%s on %s (pid %d)", h.Client.App, h.Client.Host, h.Client.PID)
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

package why

import (
	"fmt"
	"strings"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/views/words"
	"github.com/lockwarden/lockwarden/web/history"
	"github.com/lockwarden/lockwarden/web/live"
)

// LimiterInput is what the console knows of a limiter.
type LimiterInput struct {
	Limiter inspect.LimiterInfo
	Now     time.Time
	// Second is the last complete 1 s window.
	Second inspect.Counts
	// Recent are the live windows, newest first (live.Windows.Recent):
	// the last minute is summed from them.
	Recent []live.WindowPoint
	// History is the last hour, nil when the console keeps none for it.
	History *history.LimiterHistory
	// Changes are its audited rate edits and resets, oldest first.
	Changes []inspect.AuditRecord
}

// Limiter answers for a limiter.
func Limiter(in LimiterInput) Answer {
	l := &in.Limiter
	b := newBuilder(l.Name, string(l.Kind), StateIdle)
	b.fact("kind", string(l.Kind))
	ruleSay(b, l)
	rejecting := countsSay(b, in)
	if !l.RejectionsHidden {
		startedSay(b, in, rejecting)
	}
	changeSay(b, in)
	switch {
	case rejecting:
		b.a.State = StateRejecting
	case in.Second.Acquired > 0:
		b.a.State = StateAdmitting
	}
	limiterActions(b, l)
	return b.done()
}

// ruleSay says the rule in words and, for a token bucket, its capacity
// and refill.
func ruleSay(b *builder, l *inspect.LimiterInfo) {
	rule := Rule(string(l.Kind), l.Rate, l.IntervalMS, l.PerSecond, l.Limit, l.LimitKnown)
	b.fact("rule", rule)
	b.fact("per_second", l.PerSecond)
	switch l.Kind {
	case inspect.KindTokenBucket:
		b.say(fmt.Sprintf("%s admits %s: a token bucket with capacity %s, refilling one permit every %s.",
			l.Name, rule, words.Count(l.Rate), interval(l.IntervalMS)))
		b.fact("capacity", l.Rate)
		b.fact("refill_ms", l.IntervalMS)
		if !l.AvailableUnknown {
			b.say(fmt.Sprintf("%s available now.", upper(plural(l.Available, "permit is", "permits are"))))
			b.fact("available", l.Available)
		}
	case inspect.KindCounter:
		s := fmt.Sprintf("%s is a counter at %s", l.Name, words.Count(l.Count))
		if l.LimitKnown {
			s += " of its limit " + words.Count(l.Limit)
			b.fact("limit", l.Limit)
		} else {
			s += "; " + rule
		}
		if l.TTL >= 0 {
			s += fmt.Sprintf("; its window ends in %s", dur(l.TTL.Milliseconds()))
		} else {
			s += "; it has no expiry, so it never starts over on its own"
		}
		b.say(s + ".")
		b.fact("count", l.Count)
	default:
		s := fmt.Sprintf("%s admits %s", l.Name, rule)
		if l.PerClient {
			s += " to each client"
		}
		b.say(s + ".")
		b.fact("rate", l.Rate)
		b.fact("interval_ms", l.IntervalMS)
	}
}

// countsSay says the last second and minute against the rule, and
// whether the limiter rejects now.
func countsSay(b *builder, in LimiterInput) bool {
	l, s := &in.Limiter, in.Second
	m, minuteS := lastMinute(in.Recent)
	b.fact("admitted_1s", s.Acquired)
	if l.RejectionsHidden {
		b.say(fmt.Sprintf("In the last second it counted %s admitted; Redis keeps no record of its rejections (its clients decide in their own scripts).", words.Count(s.Acquired)))
		if l.GrantsKnown {
			b.say(fmt.Sprintf("Redis shows %s granted in its current window.", words.Count(l.Grants)))
			b.fact("grants", l.Grants)
		}
		return false
	}
	b.fact("rejected_1s", s.Rejected)
	line := fmt.Sprintf("In the last second %s were admitted and %s rejected (%s of attempts)",
		words.Count(s.Acquired), words.Count(s.Rejected), percent(s.Rejected, total(s)))
	if s.Errors > 0 {
		line += fmt.Sprintf(", with %s errors", words.Count(s.Errors))
	}
	if minuteS > 1 {
		span := "minute"
		if minuteS < 60 {
			span = fmt.Sprintf("%d s the console has watched", minuteS)
		}
		line += fmt.Sprintf("; over the last %s, %s admitted and %s rejected (%s)", span, words.Count(m.Acquired), words.Count(m.Rejected), percent(m.Rejected, total(m)))
		b.fact("admitted_1m", m.Acquired)
		b.fact("rejected_1m", m.Rejected)
	}
	b.say(line + ".")
	return s.Rejected > 0
}

// lastMinute sums the 1 s windows of the last minute in ws (newest
// first, a tick apart, so only every fifth or so is taken: each second
// once), and says how many seconds they cover.
func lastMinute(ws []live.WindowPoint) (inspect.Counts, int) {
	var sum inspect.Counts
	n := 0
	if len(ws) == 0 {
		return sum, 0
	}
	newest, next := ws[0].At, ws[0].At
	for _, p := range ws {
		if newest-p.At >= 60_000 {
			break
		}
		if p.At > next {
			continue
		}
		sum = add(sum, p.Window)
		n++
		next = p.At - 1000
	}
	return sum, n
}

// startedSay says when the current run of rejections started (or when
// the last one was), from the live windows and then the history.
func startedSay(b *builder, in LimiterInput, rejecting bool) {
	now := in.Now
	if rejecting {
		start, whole := runStart(in.Recent)
		if whole && in.History != nil {
			if t, ok := historyRunStart(in.History, start); ok {
				start = t
			} else if len(in.History.Points) > 0 {
				b.say("It has been rejecting for all of the last hour the history keeps.")
				b.fact("rejecting_since_at", time.Unix(in.History.Points[0].T, 0).UTC().Format(time.RFC3339))
				return
			}
		}
		if !start.IsZero() {
			b.say(fmt.Sprintf("Rejections started at %s, %s ago, and go on.", clock(start, now), dur(now.Sub(start).Milliseconds())))
			b.fact("rejecting_since_at", start.UTC().Format(time.RFC3339))
		}
		return
	}
	if t, ok := lastRejected(in); ok {
		b.say(fmt.Sprintf("It last rejected at %s (%s ago).", clock(t, now), dur(now.Sub(t).Milliseconds())))
		b.fact("last_rejected_at", t.UTC().Format(time.RFC3339))
	} else if in.History != nil && in.History.Kept {
		b.say("It rejected nothing in the last hour.")
	}
}

// runStart is where the current run of rejecting windows began, and
// whether it reaches back as far as the windows go.
func runStart(ws []live.WindowPoint) (time.Time, bool) {
	var start time.Time
	for i, p := range ws {
		if p.Window.Rejected == 0 {
			return start, false
		}
		start = time.UnixMilli(p.At - 1000)
		if i == len(ws)-1 {
			return start, true
		}
	}
	return start, false
}

// historyRunStart extends a run that started before the live windows
// with the history's steps: false when it goes back past the first.
func historyRunStart(h *history.LimiterHistory, before time.Time) (time.Time, bool) {
	start := before
	for i := len(h.Points) - 1; i >= 0; i-- {
		p := h.Points[i]
		if p.T >= before.Unix() {
			continue
		}
		if p.Rejected == 0 {
			return start, true
		}
		start = time.Unix(p.T, 0)
	}
	return start, false
}

// lastRejected is the newest instant with rejections, live windows first.
func lastRejected(in LimiterInput) (time.Time, bool) {
	for _, p := range in.Recent {
		if p.Window.Rejected > 0 {
			return time.UnixMilli(p.At), true
		}
	}
	if in.History == nil {
		return time.Time{}, false
	}
	for i := len(in.History.Points) - 1; i >= 0; i-- {
		if p := in.History.Points[i]; p.Rejected > 0 {
			return time.Unix(p.T+in.History.StepS, 0), true
		}
	}
	return time.Time{}, false
}

// changeSay says the last audited change and what rejections did after it.
func changeSay(b *builder, in LimiterInput) {
	if len(in.Changes) == 0 {
		b.say("No change to it is in the audit trail.")
		return
	}
	r := in.Changes[len(in.Changes)-1]
	s := fmt.Sprintf("The last audited change: %s by %s at %s (%s ago)", r.Action, orWord(r.Role, "someone"), clock(r.Time, in.Now),
		dur(in.Now.Sub(r.Time).Milliseconds()))
	if r.Before != "" || r.After != "" {
		s += fmt.Sprintf(", %s → %s", orWord(r.Before, "?"), orWord(r.After, "?"))
	}
	if r.Reason != "" {
		s += fmt.Sprintf(", because %q", r.Reason)
	}
	b.say(s + ".")
	b.fact("last_change_at", r.Time.UTC().Format(time.RFC3339))
	b.fact("last_change", strings.TrimSpace(r.Action+" "+r.After))
	if r.Reason != "" {
		b.fact("last_change_reason", r.Reason)
	}
	if in.History == nil || in.Limiter.RejectionsHidden {
		return
	}
	before, after := shareAround(in.History, r.Time)
	switch {
	case total(after) == 0:
		b.say("Nothing was attempted since, in the steps the history has flushed.")
	case total(before) == 0:
		b.say(fmt.Sprintf("Since then %s of attempts were rejected.", percent(after.Rejected, total(after))))
	default:
		b.say(fmt.Sprintf("Rejections went from %s of attempts in the ten minutes before it to %s since.",
			percent(before.Rejected, total(before)), percent(after.Rejected, total(after))))
		b.fact("rejected_share_before", percent(before.Rejected, total(before)))
	}
	if total(after) > 0 {
		b.fact("rejected_share_after", percent(after.Rejected, total(after)))
	}
}

// shareAround sums the history's steps in the ten minutes before t and
// from t on.
func shareAround(h *history.LimiterHistory, t time.Time) (before, after inspect.Counts) {
	for _, p := range h.Points {
		c := inspect.Counts{Acquired: p.Acquired, Rejected: p.Rejected, Errors: p.Errors}
		switch at := time.Unix(p.T, 0); {
		case !at.Before(t):
			after = add(after, c)
		case t.Sub(at) <= 10*time.Minute:
			before = add(before, c)
		}
	}
	return before, after
}

func add(a, b inspect.Counts) inspect.Counts {
	return inspect.Counts{Acquired: a.Acquired + b.Acquired, Rejected: a.Rejected + b.Rejected, Errors: a.Errors + b.Errors}
}

func orWord(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// limiterActions are a limiter's ways out: an edit (what-if first), or a
// counter's reset.
func limiterActions(b *builder, l *inspect.LimiterInfo) {
	if l.Kind == inspect.KindCounter {
		// No terminal verb resets a counter: the page's button does.
		b.act(Action{Action: "reset", Label: "Reset the counter (on its page)", URL: limiterURL(l.Name), Admin: true,
			Does: "deletes its key: the count starts over"})
		return
	}
	flags := "--rate N --interval D"
	label := "Change its rate (what-if first)"
	if l.Kind == inspect.KindTokenBucket {
		flags, label = "--rate CAPACITY --interval REFILL", "Change its capacity or refill (what-if first)"
	}
	b.act(Action{Action: "edit", Label: label, URL: limiterURL(l.Name) + "#edit", Admin: true,
		Command: "lockwarden edit " + ShellWord(l.Name) + " " + flags + " --reason '…'",
		Does:    "replays the last hour at the new rule, then changes it through the limiter's own script, audited with the reason"})
}

// total is every outcome counted.
func total(c inspect.Counts) int64 { return c.Acquired + c.Rejected + c.Errors }

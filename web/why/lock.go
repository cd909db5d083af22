package why

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/live"
	"github.com/lockwarden/lockwarden/web/present"
)

// LockInput is what the console knows of a lock that exists.
type LockInput struct {
	// Lock is the lock with its holders and waiters annotated (who they
	// are, hold and wait times: inspect.AnnotateHolder, AnnotateWaiter).
	Lock inspect.LockInfo
	// Now is the instant the answer describes (Redis time of the read
	// where known).
	Now time.Time
	// Deadlocks are the cycles the lock is part of, annotated.
	Deadlocks []live.SeenDeadlock
	// Wait is the lock's finished waits over the last 10 s.
	Wait inspect.WaitStats
}

// stuckAfter is how long a current wait must have lasted before the
// answer calls the lock stuck rather than contended.
const stuckAfter = time.Minute

// Lock answers for a lock that exists.
func Lock(in LockInput) Answer {
	l := &in.Lock
	b := newBuilder(l.Name, string(l.Kind), StateHeld)
	b.fact("kind", string(l.Kind))
	nowMS := in.Now.UnixMilli()
	holdersSay(b, l, in.Now)
	leaseSay(b, l, in.Now)
	longest := waitersSay(b, l, nowMS, in.Wait)
	deadlockSay(b, l.Name, in.Deadlocks, in.Now)
	switch {
	case len(in.Deadlocks) > 0:
		b.a.State = StateDeadlocked
	case len(l.Holders) == 0:
		b.a.State = StateFree
	case holderGone(l.Holders) || longest >= stuckAfter.Milliseconds():
		b.a.State = StateStuck
	case l.WaitersTotal > 0:
		b.a.State = StateContended
	}
	wayOut(b, l, in.Deadlocks)
	return b.done()
}

func holderGone(hs []inspect.Holder) bool {
	return slices.ContainsFunc(hs, func(h inspect.Holder) bool { return h.Client != nil && h.Client.Gone })
}

// who is a holder or waiter in words: its registered application, host,
// pid and owner, else what inspect.DescribeHolder says.
func who(w, id string) string {
	if w != "" {
		return w
	}
	return id
}

// aside ends a who that holds commas ("billing on host-7 (pid 42),
// owner a") with one, so the words after it read as the sentence's.
func aside(w string) string {
	if strings.Contains(w, ", ") {
		return w + ","
	}
	return w
}

// holdersSay says who holds l, since when, and whether each holder's
// client lives.
func holdersSay(b *builder, l *inspect.LockInfo, now time.Time) {
	hs := l.Holders
	switch {
	case len(hs) == 0:
		b.say("Nobody holds " + l.Name + " right now (its key exists without a holder).")
		return
	case l.Kind == inspect.KindDeadlineLock:
		b.say(fmt.Sprintf("%s is held until its deadline, %s (%s).", l.Name, clock(l.Deadline, now), deadlineWords(l.Deadline, now)))
		b.fact("deadline_at", l.Deadline.UTC().Format(time.RFC3339))
		return
	case len(hs) > 1:
		names := make([]string, 0, 3)
		for _, h := range hs[:min(3, len(hs))] {
			names = append(names, who(h.Who, h.ID)+heldFor(h))
		}
		more := ""
		if len(hs) > 3 {
			more = fmt.Sprintf(", and %d more", len(hs)-3)
		}
		b.say(fmt.Sprintf("%s is held by %d holders: %s%s.", l.Name, len(hs), strings.Join(names, "; "), more))
		b.fact("holders", len(hs))
	}
	h := hs[0]
	if len(hs) == 1 {
		s := fmt.Sprintf("%s is held by %s", l.Name, aside(who(h.Who, h.ID)))
		if h.Count > 1 {
			s += fmt.Sprintf(" (%d reentries)", h.Count)
		}
		switch {
		case h.HeldMS > 0 && !h.HeldSinceSeen:
			s += fmt.Sprintf(" since %s (%s ago)", clock(now.Add(-time.Duration(h.HeldMS)*time.Millisecond), now), dur(h.HeldMS))
		case h.HeldMS > 0:
			s += fmt.Sprintf(" for at least %s (since the console first saw it, %s)", dur(h.HeldMS), clock(now.Add(-time.Duration(h.HeldMS)*time.Millisecond), now))
		default:
			s += " (since when is not recorded)"
		}
		b.say(s + ".")
	}
	b.fact("holder", h.ID)
	b.fact("holder_who", who(h.Who, h.ID))
	if c := h.Client; c != nil {
		b.fact("app", c.App)
		b.fact("host", c.Host)
		b.fact("pid", c.PID)
	}
	if id := inspect.ClientIDOf(h.ID); id != "" {
		b.fact("client_id", id)
		b.fact("owner", strings.TrimSuffix(h.ID[37:], ":write"))
	}
	if h.HeldMS > 0 {
		b.fact("held_ms", h.HeldMS)
		b.fact("held_since_at", now.Add(-time.Duration(h.HeldMS)*time.Millisecond).UTC().Format(time.RFC3339))
	}
	aliveSay(b, h)
}

func heldFor(h inspect.Holder) string {
	if h.HeldMS <= 0 {
		return ""
	}
	return " for " + dur(h.HeldMS)
}

// aliveSay says whether h's client beats, and when it last renewed.
func aliveSay(b *builder, h inspect.Holder) {
	renewed, lastRenewed := "", ""
	if h.RenewedAgoMS > 0 {
		lastRenewed = fmt.Sprintf("last renewed the lease %s ago", dur(h.RenewedAgoMS))
		renewed = " and " + lastRenewed
		b.fact("renewed_ago_ms", h.RenewedAgoMS)
	}
	switch c := h.Client; {
	case c == nil && inspect.ClientIDOf(h.ID) == "":
		if lastRenewed != "" {
			b.say("Its holder " + lastRenewed + ".")
		}
	case c == nil:
		s := "Its client does not register with lockwarden (Redisson or another library), so whether it is alive is not known"
		if lastRenewed != "" {
			s += "; it " + lastRenewed
		}
		b.say(s + ".")
		b.fact("client_alive", "unknown")
	case c.Gone:
		b.say(fmt.Sprintf("Its client stopped beating %s ago: the process is most likely gone%s.", dur(c.HeartbeatAgeMS), renewed))
		b.fact("client_alive", false)
		b.fact("heartbeat_age_ms", c.HeartbeatAgeMS)
	default:
		b.say(fmt.Sprintf("Its client is alive (last beat %s ago)%s.", dur(c.HeartbeatAgeMS), renewed))
		b.fact("client_alive", true)
		b.fact("heartbeat_age_ms", c.HeartbeatAgeMS)
	}
}

func deadlineWords(d, now time.Time) string {
	if ms := now.Sub(d).Milliseconds(); ms >= 0 {
		return "passed " + dur(ms) + " ago: the next client to try takes it over"
	}
	return "in " + dur(d.Sub(now).Milliseconds())
}

// leaseSay says when the lease ends.
func leaseSay(b *builder, l *inspect.LockInfo, now time.Time) {
	if len(l.Holders) == 0 || l.Kind == inspect.KindDeadlineLock {
		return
	}
	ms := present.LeaseMS(l.PTTL)
	b.fact("lease_ms", ms)
	if ms < 0 {
		b.say("It has no expiry: it stays until it is released or force-unlocked.")
		return
	}
	s := fmt.Sprintf("The lease ends in %s (%s)", dur(ms), clock(now.Add(l.PTTL), now))
	if h := l.Holders[0]; h.Client != nil && !h.Client.Gone && h.RenewedAgoMS > 0 {
		s += " unless its client renews it again, as it does while it works"
	}
	b.say(s + ".")
}

// waitersSay says who waits, the longest current wait first, and returns
// that wait (ms; 0 when none is known).
func waitersSay(b *builder, l *inspect.LockInfo, nowMS int64, w inspect.WaitStats) int64 {
	longest := present.LongestWaitMS(l, nowMS)
	b.fact("waiters", l.WaitersTotal)
	b.fact("longest_wait_ms", longest)
	ws := slices.Clone(l.Waiters)
	ws = slices.DeleteFunc(ws, func(w inspect.Waiter) bool { return w.RemainingMS <= 0 })
	slices.SortStableFunc(ws, func(a, b inspect.Waiter) int { return cmp.Compare(waited(b), waited(a)) })
	switch {
	case len(ws) > 0 && waited(ws[0]) >= 0:
		first := ws[0]
		longestWord := "the longest, "
		if l.WaitersTotal == 1 {
			longestWord = ""
		}
		s := fmt.Sprintf("%s for it: %s%s, for %s", upper(plural(l.WaitersTotal, "client waits", "clients wait")),
			longestWord, who(first.Who, first.Owner), dur(*first.WaitingMS))
		if len(ws) > 1 && waited(ws[1]) >= 0 {
			s += fmt.Sprintf("; then %s, for %s", who(ws[1].Who, ws[1].Owner), dur(*ws[1].WaitingMS))
		}
		b.say(s + ".")
		b.fact("longest_waiter", who(first.Who, first.Owner))
	case len(ws) > 0:
		b.say(fmt.Sprintf("%s in its fair queue (Redisson keeps no arrival times); first in line: %s.",
			upper(plural(l.WaitersTotal, "client waits", "clients wait")), who(ws[0].Who, ws[0].Owner)))
	case l.WaitersTotal > 0:
		b.say(fmt.Sprintf("%s in its queue, each past its time in line (the next operation on the lock drops them).",
			upper(plural(l.WaitersTotal, "place is left", "places are left"))))
	case l.Subscribers != nil && *l.Subscribers > 0:
		b.say(fmt.Sprintf("%s for its release (Redisson's waiters can only be counted).", upper(plural(*l.Subscribers, "client listens", "clients listen"))))
		b.fact("subscribers", *l.Subscribers)
	case len(l.Holders) > 0:
		b.say("Nobody waits for it.")
	}
	if w.Contended > 0 {
		b.say(fmt.Sprintf("In the last %d s, %d of %d acquisitions had to wait (p99 %s).", w.WindowS, w.Contended, w.Acquired, dur(w.P99MS)))
		b.fact("wait_p99_ms", w.P99MS)
	}
	return longest
}

// waited is a waiter's wait so far, -1 when not known.
func waited(w inspect.Waiter) int64 {
	if w.WaitingMS == nil {
		return -1
	}
	return *w.WaitingMS
}

// deadlockSay says which cycles the lock is part of.
func deadlockSay(b *builder, name string, ds []live.SeenDeadlock, now time.Time) {
	if len(ds) == 0 {
		return
	}
	b.fact("deadlock", true)
	for _, d := range ds {
		var path, edges []string
		for _, st := range d.Cycle {
			path = append(path, st.Lock)
			edges = append(edges, fmt.Sprintf("%s holds %s and waits for %s", aside(who(st.Who, st.Holder)), st.Lock, st.WaitsFor))
		}
		path = append(path, d.Cycle[0].Lock)
		b.fact("deadlock_path", strings.Join(path, " → "))
		b.fact("deadlock_since_at", d.Since.UTC().Format(time.RFC3339))
		b.say(fmt.Sprintf("It is part of a deadlock, seen since %s (%s ago): %s. Nothing ends it but a force-unlock.",
			clock(d.Since, now), dur(now.Sub(d.Since).Milliseconds()), strings.Join(edges, "; ")))
	}
}

// wayOut says the safe way out and lists it: in a deadlock, breaking the
// youngest hold (the least work lost); otherwise the holder-checked
// force-unlock of this lock, and release-all for a client that is gone.
func wayOut(b *builder, l *inspect.LockInfo, ds []live.SeenDeadlock) {
	if len(ds) > 0 {
		for _, st := range ds[0].Cycle {
			if !st.Youngest {
				continue
			}
			where := "this lock"
			if st.Lock != l.Name {
				where = st.Lock
			}
			b.say(fmt.Sprintf("The safe way out is to break the youngest hold of the cycle (the least work lost): the hold of %s on %s, with the holder-checked force-unlock, which does nothing if another holder has it by then; the waiter it wakes takes the lock and the cycle ends.",
				aside(who(st.Who, st.Holder)), where))
			b.fact("break_first", st.Lock)
			b.act(forceUnlockAction(st.Lock, st.Holder, who(st.Who, st.Holder), "breaks the cycle: the holder's wait ends as the other side takes the lock"))
		}
	}
	if len(l.Holders) == 0 {
		return
	}
	h := l.Holders[0]
	plan := l.ForceUnlockPlan(h.ID)
	wakes := ""
	if l.WaitersTotal > 0 && !strings.Contains(plan.Summary, "wake") {
		wakes = ", which wakes the " + plural(l.WaitersTotal, "waiter", "waiters")
	}
	if len(ds) == 0 {
		b.say(fmt.Sprintf("The safe way out, if the holder is stuck, is the holder-checked force-unlock (it does nothing if another holder has the lock by then): it %s%s.", plan.Summary, wakes))
	}
	for _, hh := range l.Holders {
		if len(ds) > 0 && slices.ContainsFunc(b.a.Actions, func(a Action) bool { return a.Holder == hh.ID && strings.Contains(a.URL, lockURL(l.Name)+"/") }) {
			continue
		}
		b.act(forceUnlockAction(l.Name, hh.ID, who(hh.Who, hh.ID), l.ForceUnlockPlan(hh.ID).Summary+wakes))
	}
	if c := h.Client; c != nil && c.Gone {
		id := inspect.ClientIDOf(h.ID)
		b.say(fmt.Sprintf("Its client is gone: release-all frees every lock %s still holds.", c.App))
		b.act(Action{Action: "release-all", Label: "Release everything " + c.App + " holds", Client: id, Admin: true,
			URL: "/clients/" + id + "/release-all", Command: "lockwarden release-all " + id + " --reason '…'",
			Does: "force-unlocks, holder-checked, every lock this client holds, and drops its places in queues"})
	}
}

package consoleclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/lockwarden/lockwarden/cmd/lockwarden/internal/present"
)

// whyFromObject answers GET /api/why/{name} for a console that does not
// have that route, from GET /api/locks/{name} (and /api/deadlocks) or
// GET /api/limiters/{name}, in the same shape. This file goes once every
// console in use answers why on its own.
func (c *Client) whyFromObject(ctx context.Context, name string) (*Why, []byte, error) {
	var w Why
	l, _, err := c.Lock(ctx, name)
	switch {
	case err == nil:
		dls, _, err := c.Deadlocks(ctx)
		if err != nil {
			return nil, nil, err
		}
		w = whyLock(*l, dls)
	case IsStatus(err, http.StatusNotFound):
		lim, _, lerr := c.Limiter(ctx, name)
		if IsStatus(lerr, http.StatusNotFound) && !strings.Contains(lerr.Error(), "--match") {
			return nil, nil, &APIError{Method: http.MethodGet, URL: c.URL(), Status: http.StatusNotFound,
				Message: fmt.Sprintf("no lock or limiter named %q", name)}
		}
		if lerr != nil {
			return nil, nil, lerr
		}
		w = whyLimiter(*lim)
	default:
		return nil, nil, err
	}
	raw, err := json.Marshal(w)
	return &w, raw, err
}

func whyLock(l Lock, dls []Deadlock) Why {
	w := Why{Name: l.Name, Kind: l.Kind, State: "held", Facts: map[string]any{"waiters": l.WaitersTotal, "lease_ms": l.PTTLMS}}
	var s []string
	if len(l.Holders) == 0 {
		w.State = "free"
		s = append(s, "Nobody holds it.")
	}
	for _, h := range l.Holders {
		held := "for " + present.Duration(h.HeldMS)
		if h.HeldSinceSeen {
			held = "for at least " + present.Duration(h.HeldMS) + " (since the console first saw it)"
		} else if h.HeldMS == 0 {
			held = "(since when is not recorded)"
		}
		line := fmt.Sprintf("Held by %s %s", orID(h.Who, h.ID), held)
		if h.RenewedAgoMS > 0 {
			line += ", last renewed " + present.Duration(h.RenewedAgoMS) + " ago"
		}
		if h.Client != nil && h.Client.Gone {
			line += "; its client stopped beating " + present.Duration(h.Client.HeartbeatAgeMS) + " ago"
			w.Facts["client_gone"] = true
		}
		s = append(s, line+".")
		w.Facts["holder"], w.Facts["held_ms"] = h.ID, h.HeldMS
		w.Actions = append(w.Actions, unlockAction(l, h))
	}
	if len(l.Holders) > 0 {
		if l.PTTLMS < 0 {
			s = append(s, "It has no expiry: it stays until it is released.")
		} else {
			s = append(s, "The lease ends in "+present.Duration(l.PTTLMS)+".")
		}
	}
	if longest := longestWaiter(l.Waiters); longest != nil {
		w.State = "contended"
		s = append(s, fmt.Sprintf("%d waiting; the longest, %s, for %s.", l.WaitersTotal,
			orID(longest.Who, longest.Owner), present.Duration(*longest.WaitingMS)))
		w.Facts["longest_wait_ms"] = *longest.WaitingMS
	} else if l.WaitersTotal > 0 {
		w.State = "contended"
		s = append(s, fmt.Sprintf("%d waiting.", l.WaitersTotal))
	} else if l.Subscribers != nil && *l.Subscribers > 0 {
		s = append(s, fmt.Sprintf("%d clients listen for its release (Redisson's waiters can only be counted).", *l.Subscribers))
	}
	for _, d := range dls {
		if !slices.ContainsFunc(d.Cycle, func(st DeadlockStep) bool { return st.Lock == l.Name }) {
			continue
		}
		w.State, w.Facts["deadlock"] = "deadlocked", true
		s = append(s, fmt.Sprintf("It is part of a deadlock (%s) that nothing ends but a force-unlock; break %s first, the least work lost.",
			d.Path(), youngest(d)))
	}
	if len(l.Holders) > 0 {
		s = append(s, "The safe way out is a force-unlock that checks the holder is still the one seen: "+
			l.ForceUnlock[l.Holders[0].ID].Summary+".")
	}
	w.Answer = strings.Join(s, " ")
	return w
}

func youngest(d Deadlock) string {
	for _, st := range d.Cycle {
		if st.Youngest {
			return fmt.Sprintf("%s held by %s", st.Lock, orID(st.Who, st.Holder))
		}
	}
	return d.Cycle[0].Lock
}

func unlockAction(l Lock, h Holder) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"action": "force-unlock", "holder": h.ID,
		"command": fmt.Sprintf("lockwarden unlock %s --holder %s --reason '…'", present.ShellWord(l.Name), present.ShellWord(h.ID)),
		"does":    l.ForceUnlock[h.ID].Summary})
	return b
}

func longestWaiter(ws []Waiter) *Waiter {
	var out *Waiter
	for i, w := range ws {
		if w.WaitingMS != nil && (out == nil || *w.WaitingMS > *out.WaitingMS) {
			out = &ws[i]
		}
	}
	return out
}

func whyLimiter(l Limiter) Why {
	w := Why{Name: l.Name, Kind: l.Kind, State: "idle", Facts: map[string]any{
		"rate": l.Rate, "interval_ms": l.IntervalMS, "per_second": l.PerSecond, "acquired": l.Window.Acquired}}
	var s []string
	if l.Count != nil {
		s = append(s, fmt.Sprintf("A counter at %d", *l.Count))
		if l.Limit != nil {
			s[0] += fmt.Sprintf(" of its limit %d", *l.Limit)
		}
		s[0] += "."
	} else {
		var limit int64
		if l.Limit != nil {
			limit = *l.Limit
		}
		s = append(s, "Admits "+present.Rule(l.Kind, l.Rate, l.IntervalMS, l.PerSecond, limit, l.Limit != nil)+".")
	}
	last := fmt.Sprintf("In the last second: %d admitted", l.Window.Acquired)
	if r := l.Window.Rejected; r != nil {
		last += fmt.Sprintf(", %d rejected", *r)
		w.Facts["rejected"] = *r
		if *r > 0 {
			w.State = "rejecting"
		}
	} else {
		last += " (its rejections are not recorded in Redis)"
	}
	if l.Window.Errors > 0 {
		last += fmt.Sprintf(", %d errors", l.Window.Errors)
	}
	if w.State == "idle" && l.Window.Acquired > 0 {
		w.State = "admitting"
	}
	s = append(s, last+".")
	if !l.AvailableUnknown && l.Count == nil {
		s = append(s, fmt.Sprintf("%d permits available now.", l.Available))
	}
	w.Answer = strings.Join(s, " ")
	b, _ := json.Marshal(map[string]string{"action": "edit",
		"command": fmt.Sprintf("lockwarden edit %s --rate N --interval D --reason '…'", present.ShellWord(l.Name))})
	w.Actions = []json.RawMessage{b}
	return w
}

func orID(who, id string) string {
	if who != "" {
		return who
	}
	return id
}

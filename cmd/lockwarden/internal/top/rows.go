package top

import (
	"cmp"
	"slices"
	"strings"

	"github.com/lockwarden/lockwarden/cmd/lockwarden/internal/consoleclient"
	"github.com/lockwarden/lockwarden/cmd/lockwarden/internal/present"
	"github.com/lockwarden/lockwarden/views/words"
)

// What the two tables show, built from the frames' state on every frame.

// lockSorts and limiterSorts are the orders `s` steps through; the first
// is the default.
var (
	lockSorts    = []string{"stuck", "name", "lease", "waiters"}
	limiterSorts = []string{"busy", "rejected", "name"}
)

// lockRow is one lock as the table shows it.
type lockRow struct {
	name    string
	mark    string // "!!" in a deadlock, "!" named by a firing alert
	rank    int    // 3 deadlocked, 2 alerted, 1 has waiters, 0 calm
	who     string // the first holder in words
	heldMS  int64  // -1 unknown
	leaseMS int64
	waiters int64
	// longestMS is the longest current wait (-1: nobody waits, or none
	// says since when): what makes a lock stuck, where wait counts only
	// the waits that ended.
	longestMS int64
	wait      consoleclient.LockWait
}

// stuckNames are the locks in a deadlock (the frames' and the last read
// of /api/deadlocks) and those a firing alert names.
func stuckNames(l *consoleclient.Live, ds []consoleclient.Deadlock, alerts []consoleclient.Alert) (deadlocked, alerted map[string]bool) {
	deadlocked, alerted = map[string]bool{}, map[string]bool{}
	for n := range l.Deadlocked {
		deadlocked[n] = true
	}
	for _, d := range ds {
		for _, st := range d.Cycle {
			deadlocked[st.Lock] = true
		}
	}
	for _, a := range alerts {
		if strings.HasPrefix(a.Rule, "lock-") {
			alerted[a.Name] = true
		}
	}
	return deadlocked, alerted
}

// lockRows are the locks whose name or holder holds filter (any case), in
// the order sort names.
func lockRows(l *consoleclient.Live, ds []consoleclient.Deadlock, filter, sort string) []lockRow {
	deadlocked, alerted := stuckNames(l, ds, l.Alerts)
	filter = strings.ToLower(filter)
	out := make([]lockRow, 0, len(l.Locks))
	for name := range l.Locks {
		r := lockRow{name: name, heldMS: -1, leaseMS: l.LeaseMS(name), waiters: l.Waiters[name], wait: l.Waits[name],
			longestMS: l.LongestWaitMS(name)}
		// The holders' order is the meta's (Redis's); who says who they are.
		for _, h := range l.Holders[name] {
			hw, ok := l.Who[name][h.ID]
			if !ok {
				hw.Who = h.ID // a holder the frame has no words for yet
			}
			if r.who == "" {
				r.who = hw.Who
				if hw.HeldSince > 0 {
					r.heldMS = max(0, l.At-hw.HeldSince)
				}
			} else {
				r.who += " +1"
				break
			}
		}
		switch {
		case deadlocked[name]:
			r.mark, r.rank = "!!", 3
		case alerted[name]:
			r.mark, r.rank = "!", 2
		case r.waiters > 0 || r.longestMS >= 0:
			r.rank = 1
		}
		if filter != "" && !strings.Contains(strings.ToLower(name), filter) && !strings.Contains(strings.ToLower(r.who), filter) {
			continue
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b lockRow) int {
		switch sort {
		case "stuck":
			// Stuck first, then the longest current wait, then the most
			// waiters, then the slowest finished waits.
			if c := cmp.Compare(b.rank, a.rank); c != 0 {
				return c
			}
			if c := cmp.Compare(b.longestMS, a.longestMS); c != 0 {
				return c
			}
			if c := cmp.Compare(b.waiters, a.waiters); c != 0 {
				return c
			}
			if c := cmp.Compare(b.wait.P99MS, a.wait.P99MS); c != 0 {
				return c
			}
		case "lease": // the soonest to expire first, no expiry last
			if c := cmp.Compare(leaseKey(a.leaseMS), leaseKey(b.leaseMS)); c != 0 {
				return c
			}
		case "waiters":
			if c := cmp.Compare(b.waiters, a.waiters); c != 0 {
				return c
			}
		}
		return strings.Compare(a.name, b.name)
	})
	return out
}

func leaseKey(ms int64) int64 {
	if ms < 0 {
		return 1 << 62
	}
	return ms
}

func (r lockRow) cells() []string {
	held, waiters, longest, p99 := "", "", "", ""
	if r.heldMS >= 0 {
		held = words.Duration(r.heldMS)
	}
	if r.longestMS >= 0 {
		longest = words.Duration(r.longestMS)
	}
	if r.waiters > 0 {
		waiters = words.Count(r.waiters)
	}
	if r.wait.Contended > 0 {
		p99 = words.Duration(r.wait.P99MS)
	}
	who := r.who
	if who == "" {
		who = "(free)"
	}
	return []string{r.mark, r.name, who, held, present.Lease(r.leaseMS), waiters, longest, p99}
}

// lockColumns are the locks table's columns. LONGEST is the longest
// current wait. At 80 columns the finished waits' p99 gives way to the
// names and holders first, then the longest wait.
var lockColumns = []present.Column{{Title: "", Width: 2}, {Title: "NAME", Shrink: true, Min: 20}, {Title: "HOLDER", Shrink: true, Min: 12},
	{Title: "HELD", Width: 9, Right: true}, {Title: "LEASE", Width: 9, Right: true}, {Title: "WAITERS", Right: true},
	{Title: "LONGEST", Right: true, Drop: 1}, {Title: "WAIT p99", Right: true, Drop: 2}}

// history is a limiter's last seconds, oldest first.
type history struct{ acquired, rejected []int64 }

// historyLen is how many seconds a sparkline can show at most.
const historyLen = 120

func (h *history) add(c consoleclient.Counts) {
	h.acquired = append(h.acquired, c.Acquired)
	h.rejected = append(h.rejected, c.Rejected)
	if len(h.acquired) > historyLen {
		h.acquired, h.rejected = h.acquired[1:], h.rejected[1:]
	}
}

// limiterRow is one limiter as the table shows it.
type limiterRow struct {
	name   string
	mark   string
	rule   string
	counts consoleclient.Counts
	hidden bool // its rejections are not recorded
	hist   *history
}

func limiterRows(l *consoleclient.Live, hist map[string]*history, filter, sort string) []limiterRow {
	alerted := map[string]bool{}
	for _, a := range l.Alerts {
		if strings.HasPrefix(a.Rule, "limiter-") {
			alerted[a.Name] = true
		}
	}
	filter = strings.ToLower(filter)
	out := make([]limiterRow, 0, len(l.Limiters))
	for name, c := range l.Limiters {
		if filter != "" && !strings.Contains(strings.ToLower(name), filter) {
			continue
		}
		info := l.LimiterInfo[name]
		r := limiterRow{name: name, counts: c, hidden: info.RejectionsHidden, hist: hist[name], rule: present.Rule(info.Kind, info.Rate, info.IntervalMS, info.PerSecond, info.Limit, info.LimitKnown)}
		if alerted[name] {
			r.mark = "!"
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b limiterRow) int {
		switch sort {
		case "busy":
			if c := cmp.Compare(b.mark, a.mark); c != 0 {
				return c
			}
			if c := cmp.Compare(b.counts.Acquired+b.counts.Rejected, a.counts.Acquired+a.counts.Rejected); c != 0 {
				return c
			}
		case "rejected":
			if c := cmp.Compare(b.counts.Rejected, a.counts.Rejected); c != 0 {
				return c
			}
		}
		return strings.Compare(a.name, b.name)
	})
	return out
}

func (r limiterRow) cells(spark int) []string {
	rejected := words.Count(r.counts.Rejected)
	if r.hidden {
		rejected = "–" // not recorded in Redis
	}
	var acq, rej string
	if r.hist != nil {
		acq, rej = present.Spark(r.hist.acquired, spark), present.Spark(r.hist.rejected, spark)
	}
	if r.hidden {
		rej = ""
	}
	return []string{r.mark, r.name, r.rule, words.Count(r.counts.Acquired), rejected, acq, rej}
}

// limiterColumns are the limiters table's columns; the sparklines show
// the last seconds, one cell each.
var limiterColumns = []present.Column{{Title: "", Width: 1}, {Title: "NAME", Shrink: true, Min: 16}, {Title: "RULE", Shrink: true, Min: 8},
	{Title: "ADMIT/s", Right: true}, {Title: "REJECT/s", Right: true}, {Title: "ADMITTED"}, {Title: "REJECTED"}}

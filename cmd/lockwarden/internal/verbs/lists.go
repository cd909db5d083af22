package verbs

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lockwarden/lockwarden/cmd/lockwarden/internal/consoleclient"
	"github.com/lockwarden/lockwarden/cmd/lockwarden/internal/present"
	"github.com/lockwarden/lockwarden/views/words"
)

// The sort columns the console's lists take (web/listing.go), named in
// the help; the console refuses any other with a 400 that lists them.
const (
	lockSorts    = "name, lease, age, holder, contention, waiters"
	limiterSorts = "name, rate, acquired, rejected, ratio"
)

func listFlags(sorts string) func(fs *flag.FlagSet, o *opts) {
	return func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.match, "match", "", "only names matching this glob `pattern`, e.g. 'orders:*'")
		fs.StringVar(&o.sort, "sort", "", "sort by `column`: "+sorts)
		fs.StringVar(&o.q, "q", "", "search `text` (any case) in names and, for locks, in who holds or waits: holder or client id, app, host, owner")
	}
}

func (o *opts) query() consoleclient.ListQuery {
	return consoleclient.ListQuery{Match: o.match, Sort: o.sort, Q: o.q}
}

// printJSON writes rows as the console's list answer, every page in one:
// {"<key>": [...], "total": N, "next_cursor": ""}.
func printJSON(io IO, key string, rows []json.RawMessage) error {
	if rows == nil {
		rows = []json.RawMessage{}
	}
	b, err := json.MarshalIndent(map[string]any{key: rows, "total": len(rows), "next_cursor": ""}, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(io.Stdout, "%s\n", b)
	return err
}

// printRaw writes one answer of the console as it came, indented.
func printRaw(io IO, raw []byte) error {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(io.Stdout, "%s\n", b)
	return err
}

// empty says what an empty list searched and among how many (all, the
// console's count before the filters), so "nothing" is not read as
// "nothing exists".
func empty(io IO, what, state string, all int, o *opts) error {
	var in []string
	if o.match != "" {
		in = append(in, "--match "+strconv.Quote(o.match))
	}
	if o.q != "" {
		in = append(in, "-q "+strconv.Quote(o.q))
	}
	msg := "No " + what + " " + state + " right now."
	if len(in) > 0 {
		msg = fmt.Sprintf("No %s match %s among the %d %s.", what, strings.Join(in, " and "), all, state)
	}
	_, err := fmt.Fprintln(io.Stdout, msg)
	return err
}

func runLocks(ctx context.Context, c *consoleclient.Client, o *opts, io IO) error {
	l, err := c.Locks(ctx, o.query())
	if err != nil {
		return err
	}
	if o.json {
		return printJSON(io, "locks", l.Raw)
	}
	if len(l.Items) == 0 {
		return empty(io, "locks", "held", l.All, o)
	}
	// Names and applications first; where the terminal is narrow, the
	// kind and then the holder's place give way.
	cols := []present.Column{{Title: "NAME", Shrink: true, Min: 16}, {Title: "APP", Shrink: true, Min: 8},
		{Title: "HOLDER", Shrink: true, Min: 12, Drop: 1}, {Title: "HELD", Right: true}, {Title: "LEASE", Right: true},
		{Title: "WAITERS", Right: true}, {Title: "LONGEST", Right: true}, {Title: "KIND", Drop: 2}}
	rows := make([][]string, 0, len(l.Items))
	for _, x := range l.Items {
		app, holder, held := "–", "(free)", ""
		if len(x.Holders) > 0 {
			h := x.Holders[0]
			app, holder = HolderApp(h), HolderPlace(h)
			if len(x.Holders) > 1 {
				holder += fmt.Sprintf(" +%d more", len(x.Holders)-1)
			}
			if h.HeldMS > 0 {
				held = words.Duration(h.HeldMS)
			}
		}
		waiters, longest := "", ""
		if x.WaitersTotal > 0 {
			waiters = words.Count(x.WaitersTotal)
		} else if x.Subscribers != nil && *x.Subscribers > 0 {
			waiters = "~" + words.Count(*x.Subscribers)
		}
		if x.LongestWaitMS > 0 {
			longest = words.Duration(x.LongestWaitMS)
		}
		lease := present.Lease(x.PTTLMS)
		if x.Stale != nil {
			lease += " (stale)"
		}
		rows = append(rows, []string{x.Name, app, holder, held, lease, waiters, longest, x.Kind})
	}
	return present.Table(io.Stdout, cols, rows, width(io.Stdout, io.Getenv))
}

// HolderApp is the holder's application, "–" for a client that does not
// register (Redisson, other libraries, a token).
func HolderApp(h consoleclient.Holder) string {
	if h.Client == nil {
		return "–"
	}
	return h.Client.App
}

// HolderPlace says where a holder runs and which of its owners holds:
// "host-7 pid 4211, owner 77", with "client gone" when it stopped
// beating; an unregistered holder is its id.
func HolderPlace(h consoleclient.Holder) string {
	if h.Client == nil {
		return h.ID
	}
	s := fmt.Sprintf("%s pid %d", h.Client.Host, h.Client.PID)
	if len(h.ID) > 37 && h.ID[36] == ':' {
		s += ", owner " + strings.TrimSuffix(h.ID[37:], ":write")
	}
	if h.Client.Gone {
		s += ", client gone"
	}
	return s
}

func runLimiters(ctx context.Context, c *consoleclient.Client, o *opts, io IO) error {
	l, err := c.Limiters(ctx, o.query())
	if err != nil {
		return err
	}
	if o.json {
		return printJSON(io, "limiters", l.Raw)
	}
	if len(l.Items) == 0 {
		return empty(io, "limiters", "known to the console", l.All, o)
	}
	cols := []present.Column{{Title: "NAME", Shrink: true, Min: 12}, {Title: "RULE", Shrink: true, Min: 8},
		{Title: "ADMITTED/s", Right: true}, {Title: "REJECTED/s", Right: true},
		{Title: "SHARE", Right: true}, {Title: "AVAILABLE", Right: true}, {Title: "KIND", Drop: 1}}
	rows := make([][]string, 0, len(l.Items))
	hidden := false
	for _, x := range l.Items {
		rejected, share := "–", ""
		hidden = hidden || x.Window.Rejected == nil
		if r := x.Window.Rejected; r != nil {
			rejected = words.Count(*r)
			share = present.Percent(*r, *r+x.Window.Acquired)
		}
		avail := words.Count(x.Available)
		if x.AvailableUnknown {
			avail = "per client"
		}
		rows = append(rows, []string{x.Name, Rule(x), words.Count(x.Window.Acquired),
			rejected, share, avail, x.Kind})
	}
	if err := present.Table(io.Stdout, cols, rows, width(io.Stdout, io.Getenv)); err != nil || !hidden {
		return err
	}
	_, err = fmt.Fprintln(io.Stdout, "–: Redis keeps no record of this limiter's rejections (Redisson's limiters).")
	return err
}

// Rule is a limiter's rule in words.
func Rule(l consoleclient.Limiter) string {
	var limit int64
	if l.Limit != nil {
		limit = *l.Limit
	}
	return present.Rule(l.Kind, l.Rate, l.IntervalMS, l.PerSecond, limit, l.Limit != nil)
}

func runDeadlocks(ctx context.Context, c *consoleclient.Client, o *opts, io IO) error {
	ds, raw, err := c.Deadlocks(ctx)
	if err != nil {
		return err
	}
	if o.json {
		return printRaw(io, raw)
	}
	if len(ds) == 0 {
		_, err := fmt.Fprintln(io.Stdout, "No deadlock: no holder waits, through other holders, for itself.")
		return err
	}
	w := width(io.Stdout, io.Getenv)
	var b strings.Builder
	for i, d := range ds {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "Deadlock for %s: %s\n", words.Duration(time.Since(d.Since).Milliseconds()), d.Path())
		for _, st := range d.Cycle {
			by := st.Who
			if by == "" {
				by = st.Holder
			}
			line := fmt.Sprintf("%s is held by %s, which waits for %s.", st.Lock, by, st.WaitsFor)
			if st.Youngest {
				line += " Break this hold first: the youngest, the least work lost."
			}
			b.WriteString(present.Wrap("- "+line, w) + "\n")
			// Whole, never wrapped: it is to be copied.
			fmt.Fprintf(&b, "    lockwarden unlock %s --holder %s --reason TEXT\n", present.ShellWord(st.Lock), present.ShellWord(st.Holder))
		}
	}
	_, err = fmt.Fprint(io.Stdout, b.String())
	return err
}

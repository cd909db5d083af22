package family

import (
	"context"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/inspect/internal/nodes"
	"github.com/redis/go-redis/v9"
)

// Page is one tick's reads of family members: the members taken from the
// families' pending lists, and a SCAN page (COUNT scanCount) for each
// family running short of them. It is queued into a pipeline, the tick's
// (walk.Walker.Carry) or Tick's own, and collected once that pipeline has
// run. A nil Page reads nothing.
type Page struct {
	r     *Reader
	now   time.Time
	batch []*familyScan
	keys  [][]string // keys[i]: the members of batch[i] read
	// list are the families that list more members this tick; restart[i]
	// says list[i]'s pass is over once this page's reads are in, so its
	// SCAN starts the next pass.
	list    []*familyScan
	restart []bool
	// node is the one node's address when the SCAN pages ride in the
	// pipeline; "" on a Cluster, whose pages go to every master after it
	// (a Cluster pipeline cannot send a keyless SCAN to a chosen master).
	node string

	// Set by Queue, again for each attempt at the pipeline; queued says
	// it ran.
	queued   bool
	counters []*inspect.Candidates        // counters[i]: batch[i]'s reads when it is a counter family
	clients  [][]inspect.ClientWindowRead // clients[i]: batch[i]'s reads when it is a per-client family
	scans    []*redis.ScanCmd             // scans[i]: list[i]'s page; nil when not sent
}

// tick reads the next page of members of fams in one pipeline of its own
// (on a Cluster the pages of members to list go to every master after it).
func (r *Reader) tick(ctx context.Context, fams []inspect.Family, now time.Time) ([]inspect.FamilyReading, error) {
	pg := r.Page(fams, now)
	if pg == nil {
		return nil, nil
	}
	for attempt := 0; ; attempt++ {
		pipe := r.src.Redis().Pipeline()
		if !pg.Queue(ctx, pipe) {
			break
		}
		cmds, err := nodes.ExecCmds(ctx, pipe)
		for name, n := range nodes.CountByName(cmds) {
			r.cost.reads[name] += n
		}
		if err != nil {
			pg.Abandon()
			return nil, err
		}
		if attempt > 0 || !pg.noScript() {
			break
		}
		if err := r.src.LoadScripts(ctx); err != nil { // Redis lost the window script
			pg.Abandon()
			return nil, err
		}
	}
	return pg.Collect(ctx)
}

// Page takes this tick's members of fams (at most readsPerTick over all of
// them, families taking turns to go first) and picks the families that
// list more where fewer are pending than a page needs; nil when there are
// no families. now is the caller's clock: a window ends at now plus its
// TTL.
func (r *Reader) Page(fams []inspect.Family, now time.Time) *Page {
	r.cost = cost{reads: map[string]int{}}
	live := make(map[string]bool, len(fams))
	for _, f := range fams {
		live[f.ID] = true
		if s := r.scans[f.ID]; s == nil || s.fam != f {
			r.drop(s)
			r.scans[f.ID] = &familyScan{fam: f, memo: map[uint64]windowMark{}}
		}
	}
	for id, s := range r.scans {
		if !live[id] {
			r.drop(s)
			delete(r.scans, id)
		}
	}
	if len(fams) == 0 {
		return nil
	}
	pg := &Page{r: r, now: now}
	if c, ok := r.src.Redis().(*redis.Client); ok {
		pg.node = c.Options().Addr
	}
	budget := readsPerTick
	r.turn = (r.turn + 1) % len(fams)
	for i := range fams {
		s := r.scans[fams[(r.turn+i)%len(fams)].ID]
		n := min(len(s.pending), budget)
		budget -= n
		pg.batch = append(pg.batch, s)
		pg.keys = append(pg.keys, s.pending[:n])
		s.pending = s.pending[n:]
	}
	for _, s := range pg.batch {
		if len(s.pending) < readsPerTick && len(pg.list) < scansPerTick {
			pg.list = append(pg.list, s)
			pg.restart = append(pg.restart, s.passOver())
		}
	}
	return pg
}

// Queue adds the page's reads (and, on one node, its SCAN pages) to pipe;
// false when it added nothing.
func (pg *Page) Queue(ctx context.Context, pipe redis.Pipeliner) bool {
	if pg == nil {
		return false
	}
	pg.queued = true
	pg.counters, pg.clients = make([]*inspect.Candidates, len(pg.batch)), make([][]inspect.ClientWindowRead, len(pg.batch))
	patterns := pg.r.src.ObjectPatterns()
	queued := 0
	for i, s := range pg.batch {
		if len(pg.keys[i]) == 0 {
			continue
		}
		if s.fam.Kind != inspect.FamilyPerClient {
			pg.counters[i] = patterns.QueueFamilyMembers(ctx, pipe, pg.keys[i])
		} else {
			for _, k := range pg.keys[i] {
				pg.clients[i] = append(pg.clients[i], inspect.QueueClientWindow(ctx, pipe, s.fam.ID, memberID(s.fam, k)))
			}
		}
		queued += len(pg.keys[i])
	}
	pg.scans = make([]*redis.ScanCmd, len(pg.list))
	if pg.node == "" {
		return queued > 0
	}
	for i, s := range pg.list {
		cursor := uint64(0)
		if !pg.restart[i] {
			if s.ended[pg.node] {
				continue
			}
			cursor = s.cursors[pg.node]
		}
		pg.scans[i] = pipe.ScanType(ctx, cursor, keyMatch(s.fam), scanCount, "string")
		queued++
	}
	return queued > 0
}

// Scans is how many SCAN pages Queue added to the pipeline.
func (pg *Page) Scans() int {
	if pg == nil {
		return 0
	}
	n := 0
	for _, sc := range pg.scans {
		if sc != nil {
			n++
		}
	}
	return n
}

// Cost is what the page sent outside the pipeline it was queued in (a
// Cluster's SCAN pages, a script load), by command name, and the keys its
// SCAN pages examined (the COUNTs sent, in the pipeline or not): the walk
// prices them into its budget.
func (pg *Page) Cost() (reads map[string]int, scanned int64) {
	if pg == nil {
		return nil, 0
	}
	return pg.r.cost.reads, pg.r.cost.scanned
}

// Abandon puts the members taken back: the pipeline did not run.
func (pg *Page) Abandon() {
	if pg == nil {
		return
	}
	for i, s := range pg.batch {
		s.pending = append(pg.keys[i][:len(pg.keys[i]):len(pg.keys[i])], s.pending...)
	}
}

// noScript reports whether a window read found Redis without the window
// script.
func (pg *Page) noScript() bool {
	for _, reads := range pg.clients {
		for _, rd := range reads {
			if rd.NoScript() {
				return true
			}
		}
	}
	return false
}

// Collect turns what the pipeline read into readings and takes the
// listed members; on a Cluster it lists them now, on every master.
func (pg *Page) Collect(ctx context.Context) ([]inspect.FamilyReading, error) {
	if pg == nil {
		return nil, nil
	}
	r := pg.r
	if !pg.queued { // the sample left the page out
		pg.Abandon()
		return nil, nil
	}
	if pg.noScript() {
		// Redis lost the window script after the sample's own reads found
		// it: read these members again next tick.
		pg.Abandon()
		r.cost.reads["script"]++
		return nil, r.src.LoadScripts(ctx)
	}
	var out []inspect.FamilyReading
	for i, s := range pg.batch {
		var counters map[string]inspect.LimiterInfo
		if c := pg.counters[i]; c != nil {
			_, lims, _ := c.Classify(pg.now.UnixMilli())
			counters = make(map[string]inspect.LimiterInfo, len(lims))
			for _, l := range lims {
				counters[l.Name] = l
			}
		}
		for j, k := range pg.keys[i] {
			rd := inspect.FamilyReading{Family: s.fam.ID, Key: k, ID: memberID(s.fam, k), Limit: s.fam.Limit}
			if s.fam.Kind != inspect.FamilyPerClient {
				lim, ok := counters[k]
				if !ok || lim.Kind != memberKind[s.fam.Kind] {
					continue
				}
				rd.Count, rd.TTL = lim.Count, lim.TTL
				r.credit(s, &rd, pg.now, false)
			} else {
				w, ok := pg.clients[i][j].Window(s.fam.Limit)
				if !ok {
					continue
				}
				s.keepClient(w, pg.now)
				rd.Count, rd.TTL = w.Used, -1
				fixed := w.ResetInMS > 0
				if fixed {
					rd.TTL = time.Duration(w.ResetInMS) * time.Millisecond
				}
				r.credit(s, &rd, pg.now, !fixed)
			}
			s.found++
			s.size.Keys = max(s.size.Keys, s.found)
			out = append(out, rd)
		}
	}
	for i, s := range pg.list {
		if pg.node == "" {
			if err := r.list(ctx, s, pg.now); err != nil {
				return out, err
			}
			continue
		}
		if pg.scans[i] == nil {
			continue
		}
		keys, next, err := pg.scans[i].Result()
		if err != nil {
			continue // the cursor stays: the same page is asked for next tick
		}
		r.startPass(s, pg.now)
		r.cost.scanned += scanCount
		r.takePage(s, pg.node, keys, next)
	}
	return out, nil
}

// memberKind is the limiter kind a family's members are read as.
var memberKind = map[inspect.FamilyKind]inspect.Kind{
	inspect.FamilyCounters: inspect.KindCounter,
	inspect.FamilyEnvoy:    inspect.KindEnvoyRatelimit,
	inspect.FamilyExpress:  inspect.KindExpressRateLimit,
}

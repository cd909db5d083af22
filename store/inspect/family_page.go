package inspect

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect/internal/nodes"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// familyPage is one tick's reads of family members: the members taken
// from the families' pending lists, and a SCAN page (COUNT
// familyScanCount) for each family running short of them. It is queued
// into a pipeline, the sampler's (Walker.Carry) or Tick's own, and
// collected once that pipeline has run.
type familyPage struct {
	r     *FamilyReader
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

	// Set by queue, again for each attempt at the pipeline; queued says
	// it ran.
	queued bool
	strs   [][]stringRead
	wins   [][]*redis.Cmd
	scans  []*redis.ScanCmd // scans[i]: list[i]'s page; nil when not sent
}

// Tick reads the next page of members of fams (at most FamilyReadsPerTick
// over all of them, families taking turns to go first) and lists more
// members where fewer are pending than the page needs, in one pipeline of
// its own (on a Cluster the pages of members to list go to every master
// after it). now is the caller's clock: a window ends at now plus its TTL.
// The console reads the same page in its tick's pipeline instead
// (Walker.Carry).
func (r *FamilyReader) Tick(ctx context.Context, fams []Family, now time.Time) ([]FamilyReading, error) {
	pg := r.prepare(fams, now)
	if pg == nil {
		return nil, nil
	}
	for attempt := 0; ; attempt++ {
		pipe := r.in.rdb.Pipeline()
		if !pg.queue(ctx, pipe) {
			break
		}
		cmds, err := nodes.ExecCmds(ctx, pipe)
		for name, n := range nodes.CountByName(cmds) {
			r.cost.Reads[name] += n
		}
		if err != nil {
			pg.abandon()
			return nil, err
		}
		if attempt > 0 || !noScript(flatten(pg.wins)) {
			break
		}
		if err := r.in.loadStateScript(ctx); err != nil { // Redis lost the window script
			pg.abandon()
			return nil, err
		}
	}
	return pg.collect(ctx)
}

// prepare takes this tick's members (what each family has pending, in
// turn) and picks the families that list more; nil when there are no
// families.
func (r *FamilyReader) prepare(fams []Family, now time.Time) *familyPage {
	r.cost = FamilyCost{Reads: map[string]int{}}
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
	pg := &familyPage{r: r, now: now}
	if c, ok := r.in.rdb.(*redis.Client); ok {
		pg.node = c.Options().Addr
	}
	budget := FamilyReadsPerTick
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
		if len(s.pending) < FamilyReadsPerTick && len(pg.list) < FamilyScansPerTick {
			pg.list = append(pg.list, s)
			pg.restart = append(pg.restart, s.passOver())
		}
	}
	return pg
}

// passOver says s's pass has listed and read every member on every node.
func (s *familyScan) passOver() bool {
	return s.cursors != nil && len(s.pending) == 0 && len(s.ended) > 0 && len(s.ended) == len(s.cursors)
}

// queue adds the page's reads (and, on one node, its SCAN pages) to pipe;
// false when it added nothing.
func (pg *familyPage) queue(ctx context.Context, pipe redis.Pipeliner) bool {
	pg.queued = true
	pg.strs, pg.wins = make([][]stringRead, len(pg.batch)), make([][]*redis.Cmd, len(pg.batch))
	queued := 0
	for i, s := range pg.batch {
		for _, k := range pg.keys[i] {
			if s.fam.Kind == FamilyCounters {
				pg.strs[i] = append(pg.strs[i], queueStringRead(ctx, pipe, k))
			} else {
				pg.wins[i] = append(pg.wins[i], queueWindowState(ctx, pipe, s.fam.ID, strings.TrimPrefix(k, s.fam.prefix)))
			}
			queued++
		}
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
		pg.scans[i] = pipe.ScanType(ctx, cursor, s.fam.scan, familyScanCount, "string")
		queued++
	}
	return queued > 0
}

// abandon puts the members taken back: the pipeline did not run.
func (pg *familyPage) abandon() {
	if pg == nil {
		return
	}
	for i, s := range pg.batch {
		s.pending = append(pg.keys[i][:len(pg.keys[i]):len(pg.keys[i])], s.pending...)
	}
}

// collect turns what the pipeline read into readings and takes the
// listed members; on a Cluster it lists them now, on every master.
func (pg *familyPage) collect(ctx context.Context) ([]FamilyReading, error) {
	r := pg.r
	if !pg.queued { // the sample left the page out
		pg.abandon()
		return nil, nil
	}
	if noScript(flatten(pg.wins)) {
		// Redis lost the window script after the sample's own reads found
		// it: read these members again next tick.
		pg.abandon()
		r.cost.Reads["script"]++
		return nil, r.in.loadStateScript(ctx)
	}
	patterns := r.in.ObjectPatterns()
	var out []FamilyReading
	for i, s := range pg.batch {
		for j, k := range pg.keys[i] {
			rd := FamilyReading{Family: s.fam.ID, Key: k, ID: strings.TrimPrefix(k, s.fam.prefix), Limit: s.fam.Limit}
			if s.fam.Kind == FamilyCounters {
				_, lim := pg.strs[i][j].classify(patterns, k)
				if lim == nil || lim.Kind != KindCounter {
					continue
				}
				rd.Count, rd.TTL = lim.Count, lim.TTL
				r.credit(s, &rd, pg.now, false)
			} else {
				ws, ok := readWindowState(pg.wins[i][j])
				if !ok || ws.value < 0 {
					continue
				}
				rd.Count, rd.TTL = ws.used, time.Duration(ws.pttlMS)*time.Millisecond
				if !ws.hasGrants && ws.pttlMS > 0 { // a fixed window
					rd.Count = max(0, s.fam.Limit-ws.value)
				}
				r.credit(s, &rd, pg.now, ws.hasGrants)
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
		r.cost.Scanned += familyScanCount
		r.takePage(s, pg.node, keys, next)
	}
	return out, nil
}

func flatten(cmds [][]*redis.Cmd) []*redis.Cmd {
	var out []*redis.Cmd
	for _, c := range cmds {
		out = append(out, c...)
	}
	return out
}

// startPass closes s's pass when it is over and starts the next one.
func (r *FamilyReader) startPass(s *familyScan, now time.Time) {
	if s.passOver() {
		s.size = FamilySize{Keys: s.found, Passes: s.size.Passes + 1}
		s.cursors, s.ended, s.found = nil, nil, 0
		r.sweep(s, now)
	}
	if s.cursors == nil {
		s.cursors, s.ended = map[string]uint64{}, map[string]bool{}
	}
}

// list SCANs the next page of s's members on every node, or, when the
// pass is over, starts the next one.
func (r *FamilyReader) list(ctx context.Context, s *familyScan, now time.Time) error {
	r.startPass(s, now)
	var mu sync.Mutex
	return r.in.forEachNode(ctx, func(ctx context.Context, node *redis.Client) error {
		addr := nodeAddr(node)
		mu.Lock()
		cursor, done := s.cursors[addr], s.ended[addr]
		mu.Unlock()
		if done {
			return nil
		}
		keys, next, err := node.ScanType(ctx, cursor, s.fam.scan, familyScanCount, "string").Result()
		mu.Lock()
		defer mu.Unlock()
		r.cost.Reads["scan"]++
		if err != nil {
			return err
		}
		r.cost.Scanned += familyScanCount
		r.takePage(s, addr, keys, next)
		return nil
	})
}

// takePage takes one SCAN page of s's members from the node at addr.
func (r *FamilyReader) takePage(s *familyScan, addr string, keys []string, next uint64) {
	s.cursors[addr] = next
	if next == 0 {
		s.ended[addr] = true
	}
	patterns := r.in.ObjectPatterns()
	for _, k := range keys {
		if s.fam.Kind == FamilyCounters {
			// A counter belongs to the first pattern it matches. A
			// client's window is its limiter's side key: the limiter's
			// name passed --match.
			if rule, ok := patterns.counterRule(k); !ok || rule.Pattern != s.fam.ID || !GlobMatch(r.match, k) || wire.IsInternalKey(k) {
				continue
			}
		}
		s.pending = append(s.pending, k)
	}
}

// nodeAddr names a node for its cursor.
func nodeAddr(node redis.Cmdable) string {
	if c, ok := node.(*redis.Client); ok {
		return c.Options().Addr
	}
	return ""
}

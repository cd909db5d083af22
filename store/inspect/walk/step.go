package walk

import (
	"context"
	"slices"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/inspect/internal/nodes"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// One step of the walk, riding in a tick's sample pipeline (stepRider, an
// inspect.Rider): a SCAN page of every type and DBSIZE (when the walk
// scans), INFO for the pacer now and then, the registry's new names, TYPE
// of the keys a previous page listed or a notification named, HLEN of the
// hashes among them, and the reads of the candidates: hashes sized small,
// sorted sets, strings a pattern or a framework convention claims (others
// are never read), classified by inspect.Candidates. A key's type is
// checked once, by its TYPE; the reads after it are of that type.

// ClassifiedAfter is how many ticks after the page that listed it a key
// is classified: typed, sized (a hash), read.
const ClassifiedAfter = 3

// walkCommands counts the commands of the step that are the walk's own
// (priced by the cost per key, not as sampling).
func (s *scanStep) walkCommands() map[string]int {
	n := map[string]int{"type": len(s.typ), "hlen": len(s.size), "hgetall": len(s.read),
		"pttl": len(s.read) + len(s.readZ) + len(s.readStr), "zrange": len(s.readZ), "zcard": len(s.readZ),
		"strlen": len(s.readStr), "getrange": len(s.readStr)}
	if !s.noScan {
		n["scan"], n["dbsize"] = 1, 1
	}
	if s.info {
		n["info"] = 1
	}
	if s.fam != nil { // their keys are charged as the walk's (charge)
		n["scan"] += s.fam.Scans()
	}
	return n
}

// scanStep is one step of the walk.
type scanStep struct {
	match  string   // SCAN MATCH ("" means "*")
	noScan bool     // no SCAN page (a Cluster, or string patterns)
	cursor uint64   // the previous page's cursor; 0 starts a pass
	count  int64    // SCAN COUNT
	dbSize int64    // keys in the database at the previous page
	typ    []string // keys to TYPE (a previous page's new keys, notified names)
	size   []string // hashes to HLEN (typed so by the previous step)
	read   []string // hashes to read and classify (sized small, or announced)
	readZ  []string // sorted sets to read and classify
	// readStr are strings announced as token locks or counters, read and
	// classified as such (by patterns).
	readStr  []string
	patterns inspect.ObjectPatterns
	info     bool // read INFO commandstats for the pacer

	registry *registryReader
	// fam is a page of family members read in the same pipeline
	// (Walker.Carry); nil when none.
	fam Carried
}

// scanResult is what one scanStep found.
type scanResult struct {
	cursor    uint64   // the next step's cursor; 0 when this page ended a pass
	keys      []string // keys this page listed, internal keys left out
	hashes    []string // typ keys that are hashes
	zsets     []string // typ keys that are sorted sets
	strs      []string // typ keys that are strings a pattern or convention claims
	untyped   []string // typ keys of no candidate type
	gone      []string // typ keys that no longer exist
	small     []string // size keys with 1..MaxHashFields fields
	skipped   int      // size keys with more fields than any known layout
	large     []string // those keys
	none      []string // read keys whose fields are no known layout
	locks     []inspect.LockInfo
	limiters  []inspect.LimiterInfo
	dbSize    int64     // keys in the database, for sizing the next pages
	announced []string  // names the registry announced since the last read
	cost      redisCost // the walk's Redis cost so far (when infoOK)
	infoOK    bool
}

// scanReads is a scanStep queued in a pipeline.
type scanReads struct {
	step   *scanStep
	scan   *redis.ScanCmd
	dbsize *redis.IntCmd
	names  *redis.ZSliceCmd
	info   *redis.StringCmd
	types  []*redis.StatusCmd
	lens   []*redis.IntCmd
	reads  *inspect.Candidates
}

func queueScan(ctx context.Context, pipe redis.Pipeliner, step *scanStep) *scanReads {
	r := &scanReads{step: step, lens: make([]*redis.IntCmd, len(step.size)), types: make([]*redis.StatusCmd, len(step.typ))}
	if !step.noScan {
		match := step.match
		if match == "" {
			match = "*"
		}
		r.scan = pipe.Scan(ctx, step.cursor, match, step.count)
		r.dbsize = pipe.DBSize(ctx)
	}
	for i, k := range step.typ {
		r.types[i] = pipe.Type(ctx, k)
	}
	if step.info {
		r.info = pipe.Info(ctx, "commandstats", "cpu")
	}
	if step.registry != nil {
		r.names = step.registry.queue(ctx, pipe)
	}
	for i, k := range step.size {
		r.lens[i] = pipe.HLen(ctx, k)
	}
	r.reads = step.patterns.QueueCandidateKeys(ctx, pipe, inspect.CandidateKeys{Hashes: step.read, Strings: step.readStr, Zsets: step.readZ})
	return r
}

// result classifies what the step read.
func (r *scanReads) result(nowMS int64) (*scanResult, error) {
	out := &scanResult{}
	if r.scan != nil {
		keys, cursor, err := r.scan.Result()
		if err != nil {
			return nil, err
		}
		out.cursor, out.dbSize = cursor, r.dbsize.Val()
		for _, k := range keys {
			if !wire.IsInternalKey(k) {
				out.keys = append(out.keys, k)
			}
		}
	}
	if r.info != nil {
		if v, err := r.info.Result(); err == nil {
			out.cost, out.infoOK = parseRedisCost(v), true
		}
	}
	if r.names != nil {
		out.announced = r.step.registry.result(r.names)
	}
	for i, k := range r.step.typ {
		switch t, _ := r.types[i].Result(); {
		case t == "hash":
			out.hashes = append(out.hashes, k)
		case t == "zset":
			out.zsets = append(out.zsets, k)
		case t == "string" && r.step.patterns.ReadsString(k):
			out.strs = append(out.strs, k)
		case t == "none" || t == "":
			out.gone = append(out.gone, k)
		default:
			out.untyped = append(out.untyped, k)
		}
	}
	out.small, out.large = smallHashes(r.step.size, r.lens)
	out.skipped = len(out.large)
	out.locks, out.limiters, out.none = r.reads.Classify(nowMS)
	return out, nil
}

// stepRider is a step of the walk riding in a sample's pipeline.
type stepRider struct {
	step  *scanStep
	reads *scanReads
	res   *scanResult
	sent  map[string]int // the pipeline's commands by name, for the pacer
}

func (r *stepRider) Queue(ctx context.Context, pipe redis.Pipeliner, up func(key string) bool) {
	step := r.step
	if up != nil {
		step = step.offDown(up)
	}
	r.reads = queueScan(ctx, pipe, step)
	// While a master is down the family page waits: its members may live
	// there, and a read sent to it would hold up the whole tick.
	if r.step.fam != nil && up == nil {
		r.step.fam.Queue(ctx, pipe)
	}
}

func (r *stepRider) Read(at time.Time, cmds []redis.Cmder) error {
	res, err := r.reads.result(at.UnixMilli())
	if err != nil {
		return err
	}
	r.res = res
	if !r.step.noScan { // only the walk's pacer prices them
		r.sent = nodes.CountByName(cmds)
	}
	return nil
}

// offDown is s without its reads of keys whose master up says does not
// answer (and without the registry read when the registry lives there).
func (s *scanStep) offDown(up func(key string) bool) *scanStep {
	out := *s
	if out.registry != nil && !up(inspect.RegistryNamesKey) {
		out.registry = nil
	}
	for _, keys := range []*[]string{&out.typ, &out.size, &out.read, &out.readZ, &out.readStr} {
		*keys = slices.DeleteFunc(slices.Clone(*keys), func(k string) bool { return !up(k) })
	}
	return &out
}

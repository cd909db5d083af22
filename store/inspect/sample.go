package inspect

import (
	"context"
	"errors"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect/internal/nodes"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Sample is one sampler tick: fresh state and stats of known objects, read
// in one pipelined round trip per Redis node.
type Sample struct {
	At       time.Time          // Redis TIME at the sample
	Locks    []LockInfo         // requested locks that still exist, in request order
	Limiters []LimiterInfo      // requested limiters that still exist, in request order
	Stats    map[string]Summary // by object name, for every requested name
	Walk     *WalkStep          // Walker.Tick's page of discovery; nil for Sample
	// Unreadable holds the requested objects whose reads failed because
	// their node did not answer (down, unreachable, or refusing with
	// CLUSTERDOWN, LOADING and the like). They are in neither Locks,
	// Limiters nor Stats, yet not gone: the caller keeps what it last knew.
	// Nil when every node answered.
	Unreadable map[string]Unread
	// Registry is the client registry when Walker.ReadClients asked this
	// tick to read it; nil otherwise, or when the read failed.
	Registry *Registry
	// Families are the readings of the family page Walker.Carry asked this
	// tick to read; FamiliesErr is why some of them are missing.
	Families    []FamilyReading
	FamiliesErr error
	scan        *scanResult
	// sides says, for each hash lock read, whether the read found any of
	// its side keys (cadence.go reads lightly the idle ones that have none).
	sides map[string]bool
	// sent counts the pipeline's commands by name, for the walk's pacer
	// (the console's own share of Redis CPU, pace.go).
	sent map[string]int
	// ringLens are the fields of each limiter's stats ring read, and
	// ringChecks those of the idle limiters' rings checked without a read
	// (HLEN, cadence.go).
	ringLens, ringChecks map[string]int64
}

// Unread is why one object could not be read in a sample.
type Unread struct {
	Node string // the master the object's slot maps to (the node's name off a Cluster)
	Err  error
}

// StaleRead marks an object shown as last read because its node did not
// answer the latest sample (the console sets it; Sample never does).
type StaleRead struct {
	Node     string
	LastRead time.Time // Redis TIME of the last sample that read it
	Reason   string
	// ClusterDown says the node answers but refuses every key
	// (CLUSTERDOWN): the whole Cluster is down, not this node alone.
	ClusterDown bool
}

// Sample reads state and stats of the named locks and limiters: TIME, then
// for each lock HGETALL and PTTL (a token lock or counter, by its configured
// pattern: STRLEN, GETRANGE and PTTL), for each limiter HGETALL, and for
// every name HGETALL of its stats ring, plus the side keys of the families
// that have them (fair queue and fencing token for each hash lock, the
// window of each Redisson limiter; see enrich.go), all in one pipeline
// (read-write locks' per-reader leases are left to Discover and GetLock) (on a Cluster the
// pipeline is split by node and the parts run concurrently). A name that no
// longer holds an object of its kind is left out of Locks or Limiters but
// still gets a Summary, so a vanished object's last outcomes stay visible
// until its ring expires. The cost grows with the number of names, never
// with the number of viewers.
//
// On a Cluster one master that does not answer fails only its own objects
// (Sample.Unreadable); TIME then comes from a master that answers. Masters
// the last Nodes call found down, or a recent sample found not answering,
// are not sent anything: their objects are Unreadable with ErrNodeDown. The
// call fails when no master answers or ctx ends; on one node, when Redis
// does not answer.
func (c *Inspector) Sample(ctx context.Context, locks, limiters []string) (*Sample, error) {
	s, err := c.sampleWith(ctx, locks, limiters, nil, nil, nil)
	if err == nil {
		c.applyWaits(s)
	}
	return s, err
}

// sampleWith is Sample with one step of the walk in the same pipeline (its
// findings in Sample.scan); step may be nil. The hash locks named in light
// get a light read (sidekeys.go) where their side keys share their slot;
// the limiters in ringChecks, not read, get an HLEN of their stats ring.
func (c *Inspector) sampleWith(ctx context.Context, locks, limiters []string, step *scanStep, light map[string]lightTurn, ringChecks []string) (*Sample, error) {
	for attempt := 0; ; attempt++ {
		s, again, err := c.sample(ctx, locks, limiters, step, light, ringChecks)
		if again == readDone || err != nil {
			return s, err
		}
		if attempt == 2 {
			return nil, errSampleRetries
		}
		if again == readNoScript { // Redis lost the window script: load it
			if err := c.loadStateScript(ctx); err != nil {
				return nil, err
			}
		}
		// readNodeDown: the nodes that stalled the read are now known
		// down, and the next read leaves them out.
	}
}

// readAgain says why a sample must be read again.
type readAgain int

const (
	readDone     readAgain = iota
	readNoScript           // a window read found no script
	readNodeDown           // a master that does not answer held up the whole read
)

var errSampleRetries = errors.New("inspect: sample read again too often")

// sample is one pipelined read.
func (c *Inspector) sample(ctx context.Context, locks, limiters []string, step *scanStep, light map[string]lightTurn, ringChecks []string) (*Sample, readAgain, error) {
	patterns := c.ObjectPatterns()
	down := c.nodes.Down()
	var skipped map[string]Unread
	if down != nil {
		skipped = map[string]Unread{}
		locks = c.skipDown(ctx, locks, down, skipped)
		limiters = c.skipDown(ctx, limiters, down, skipped)
		step = c.stepOffDown(ctx, step, down)
		// A check is not a read: a name left out is checked next tick.
		ringChecks = c.skipDown(ctx, ringChecks, down, map[string]Unread{})
	}
	pipe := c.rdb.Pipeline()
	var now *redis.TimeCmd
	if down == nil { // a keyless command may be sent to any master
		now = pipe.Time(ctx)
	}
	var scan *scanReads
	if step != nil {
		scan = queueScan(ctx, pipe, step)
		// While a master is down the family page waits: its members may
		// live there, and a read sent to it would hold up the whole tick.
		if step.fam != nil && down == nil {
			step.fam.queue(ctx, pipe)
		}
	}
	lockReads := make([]lockRead, len(locks))
	for i, name := range locks {
		if patterns.isTokenLockName(name) {
			sr := queueStringRead(ctx, pipe, name)
			lockReads[i] = lockRead{str: &sr, sides: &lockSides{held: queueHoldTimes(ctx, pipe, name)}}
			continue
		}
		if turn := light[name]; turn != 0 {
			if r, ok := queueLightRead(ctx, pipe, name, turn); ok {
				lockReads[i] = r
				continue
			}
		}
		lockReads[i] = lockRead{fields: pipe.HGetAll(ctx, name), pttl: pipe.PTTL(ctx, name),
			sides: queueRLockSides(ctx, pipe, name)}
	}
	limReads := make([]limRead, len(limiters))
	for i, name := range limiters {
		if _, ok := patterns.counterRule(name); ok {
			sr := queueStringRead(ctx, pipe, name)
			limReads[i] = limRead{str: &sr}
			continue
		}
		r := limRead{fields: pipe.HGetAll(ctx, name)}
		if _, plain := c.plainBuckets.Load(name); !plain {
			r.window = queueWindowState(ctx, pipe, name, "")
		}
		limReads[i] = r
	}
	rings := make(map[string]*redis.MapStringStringCmd, len(locks)+len(limiters))
	queueRing := func(name string) {
		if _, ok := rings[name]; !ok {
			rings[name] = pipe.HGetAll(ctx, wire.StatsKey(name))
		}
	}
	for i, name := range locks {
		if lockReads[i].exists == nil { // a light read's EXISTS covers the ring
			queueRing(name)
		}
	}
	for _, name := range limiters {
		queueRing(name)
	}
	checks := make(map[string]*redis.IntCmd, len(ringChecks))
	for _, name := range ringChecks {
		checks[name] = pipe.HLen(ctx, wire.StatsKey(name))
	}
	cmds, cut, err := c.nodes.ExecPartial(ctx, pipe)
	if err != nil {
		return nil, readDone, err
	}
	if cut {
		// Cut short while a dead master's dials were being retried: the
		// commands of the masters that answered lost their replies too. The
		// dead one's kept their dial errors; leave it out and read again.
		var mains []redis.Cmder
		if now != nil {
			mains = append(mains, now)
		}
		for i, name := range locks {
			mains = append(mains, lockReads[i].main())
			if ring := rings[name]; ring != nil {
				mains = append(mains, ring)
			}
		}
		for i, name := range limiters {
			mains = append(mains, limReads[i].main(), rings[name])
		}
		for _, cmd := range checks {
			mains = append(mains, cmd)
		}
		if !c.nodes.MarkFailed(ctx, mains) {
			return nil, readDone, errSampleCut
		}
		return nil, readNodeDown, nil
	}
	var at time.Time
	if now != nil {
		at, err = now.Result()
	}
	if now == nil || err != nil {
		// TIME has no key: a Cluster pipeline sends it to any master,
		// possibly the one that is down.
		if at, err = c.nodes.TimeFromLive(ctx, err, down); err != nil {
			return nil, readDone, err
		}
	}
	windows := make([]*redis.Cmd, 0, len(limReads))
	for _, r := range limReads {
		windows = append(windows, r.window)
	}
	if noScript(windows) {
		return nil, readNoScript, nil
	}

	nowMS, bucket := at.UnixMilli(), BucketOf(at)
	s := &Sample{At: at, Stats: make(map[string]Summary, len(rings))}
	if step != nil && !step.noScan { // only the walk's pacer prices them
		s.sent = nodes.CountByName(cmds)
	}
	if len(skipped) > 0 {
		s.Unreadable = skipped
	}
	for i, name := range locks {
		r := lockReads[i]
		if c.unreadable(ctx, s, name, r.main(), r.side(rings[name])) {
			continue
		}
		if r.str != nil {
			if info, _ := r.str.classify(patterns, name); info != nil {
				r.sides.apply(info, nowMS) // hold times
				s.Locks = append(s.Locks, *info)
			}
			continue
		}
		if r.exists != nil {
			// A light read reads no ring: the lock was idle, with zero
			// counts, and a ring EXISTS found is read by the full read
			// that follows.
			s.Stats[name] = Summary{Bucket: bucket}
		}
		fields, err := r.fields.Result()
		if err != nil {
			continue
		}
		if info, ok := classifyLock(name, fields, r.pttl.Val()); ok {
			r.sides.apply(&info, nowMS)
			s.Locks = append(s.Locks, info)
			if s.sides == nil {
				s.sides = map[string]bool{}
			}
			s.sides[name] = r.sidesFound(rings[name])
		}
	}
	for i, name := range limiters {
		var window redis.Cmder
		if limReads[i].window != nil {
			window = limReads[i].window
		}
		if c.unreadable(ctx, s, name, limReads[i].main(), window, rings[name]) {
			continue
		}
		if r := limReads[i].str; r != nil {
			if _, info := r.classify(patterns, name); info != nil {
				s.Limiters = append(s.Limiters, *info)
			}
			continue
		}
		fields, err := limReads[i].fields.Result()
		if err != nil {
			c.plainBuckets.Delete(name)
			continue
		}
		info, ok := classifyLimiter(name, fields, nowMS)
		if !ok || info.Kind != KindTokenBucket {
			c.plainBuckets.Delete(name)
		} else if limReads[i].window != nil { // not yet known as a bucket
			c.plainBuckets.Store(name, struct{}{})
		}
		if ok {
			if limReads[i].window == nil && info.Kind == KindRedissonLimiter && !info.PerClient {
				// It was a token bucket last tick: its window is read next tick.
				info.AvailableUnknown = true
			}
			applyWindowCmd(&info, limReads[i].window)
			s.Limiters = append(s.Limiters, info)
		}
	}
	for name, cmd := range rings {
		if _, down := s.Unreadable[name]; down {
			continue
		}
		// A ring that is missing or unreadable is an idle object: zero counts.
		fields, _ := cmd.Result()
		s.Stats[name] = summarizeFields(fields, bucket)
	}
	if len(limiters) > 0 {
		s.ringLens = make(map[string]int64, len(limiters))
		for _, name := range limiters {
			if _, down := s.Unreadable[name]; !down {
				s.ringLens[name] = int64(len(rings[name].Val()))
			}
		}
	}
	if len(checks) > 0 {
		s.ringChecks = make(map[string]int64, len(checks))
		for name, cmd := range checks {
			if n, err := cmd.Result(); err == nil {
				s.ringChecks[name] = n
			}
		}
	}
	for _, name := range locks {
		if cmd := rings[name]; cmd != nil {
			if _, down := s.Unreadable[name]; !down {
				c.waits.fold(name, cmd.Val(), bucket)
			}
		}
	}
	if scan != nil {
		res, err := scan.result(nowMS)
		if err != nil {
			return nil, readDone, err
		}
		s.scan = res
	}
	c.markDown(s.Unreadable)
	return s, readDone, nil
}

// lockRead is one lock's commands in a sample's pipeline.
type lockRead struct {
	fields *redis.MapStringStringCmd
	pttl   *redis.DurationCmd
	sides  *lockSides
	str    *stringRead   // token locks are strings
	exists *redis.IntCmd // a light read's EXISTS over the side keys (sidekeys.go)
}

// main is the read of the lock's own key.
func (r lockRead) main() redis.Cmder {
	if r.str != nil {
		return r.str.strlen
	}
	return r.fields
}

// side is the read that stands for the lock's side keys when telling
// whether its node answered: the light read's EXISTS, else the stats ring.
func (r lockRead) side(ring *redis.MapStringStringCmd) redis.Cmder {
	if r.exists != nil {
		return r.exists
	}
	if ring != nil {
		return ring
	}
	return nil
}

// limRead is one limiter's commands in a sample's pipeline.
type limRead struct {
	fields *redis.MapStringStringCmd
	window *redis.Cmd  // a Redisson limiter's window (nothing for others)
	str    *stringRead // counters are strings
}

// main is the read of the limiter's own key.
func (r limRead) main() redis.Cmder {
	if r.str != nil {
		return r.str.strlen
	}
	return r.fields
}

package inspect

import (
	"context"
	"errors"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect/clients"
	"github.com/lockwarden/lockwarden/store/inspect/internal/pubsub"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Sample is one sampler tick: fresh state and stats of known objects, read
// in one pipelined round trip per Redis node.
type Sample struct {
	At       time.Time            // Redis TIME at the sample
	LockAt   map[string]time.Time // on a Cluster, each requested lock's master's TIME (TimeOf)
	Locks    []LockInfo           // requested locks that still exist, in request order
	Limiters []LimiterInfo        // requested limiters that still exist, in request order
	Stats    map[string]Summary   // by object name, for every requested name
	Walk     *WalkStep            // the walk's step of discovery (package walk); nil for Sample
	// Unreadable holds the requested objects whose reads failed because
	// their node did not answer (down, unreachable, or refusing with
	// CLUSTERDOWN, LOADING and the like). They are in neither Locks,
	// Limiters nor Stats, yet not gone: the caller keeps what it last knew.
	// Nil when every node answered.
	Unreadable map[string]Unread
	// Registry is the client registry when SampleOptions.Clients asked
	// for it; nil otherwise, or when the read failed.
	Registry *Registry
	// Families are the readings of the family page the walk carried this
	// tick (package family); FamiliesErr is why some of them are missing.
	Families    []FamilyReading
	FamiliesErr error
	// Lingered are the SampleOptions.Linger names whose stats rings this
	// sample read: locks gone a moment ago, each with a Summary in Stats
	// (and its Wait, after AddWaits) but in no list of objects.
	Lingered []string
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
// (read-write locks' per-reader leases are left to GetLock) (on a Cluster
// the pipeline is split by node and the parts run concurrently). Each kind
// is read and parsed by its own pair (sample_kinds.go). A name that no
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
	s, _, err := c.SampleWith(ctx, locks, limiters, SampleOptions{})
	if err == nil {
		c.AddWaits(s)
	}
	return s, err
}

// TimeOf is when the sample read lock name, as its master's clock says.
func (s *Sample) TimeOf(name string) time.Time {
	if t, ok := s.LockAt[name]; ok {
		return t
	}
	return s.At
}

// SampleOptions are what the walk (package walk) asks of one sample beyond
// its names. The zero value is Sample's read.
type SampleOptions struct {
	// Light names idle hash locks to read lightly (sidekeys.go), each with
	// the light reads it had so far, which takes the occasional side keys
	// in turn.
	Light map[string]int
	// RingChecks are limiters not read whose stats rings get an HLEN
	// (Sampled.RingChecks).
	RingChecks []string
	// Subscribers are held locks whose channel's subscribers are counted
	// (subscribers.go), lock name -> its Channel.
	Subscribers map[string]string
	// Clients asks for the client registry too (Sample.Registry).
	Clients bool
	// Linger names locks that went a moment ago: only their stats rings
	// are read (Sample.Lingered), so the waits and late releases their
	// scripts recorded around the release still count once the key is
	// gone (a hand-off's wait in the bucket the lock went free in).
	Linger []string
	// Rider adds reads of its own to the same pipeline; nil: none.
	Rider Rider
}

// A Rider reads more in a sample's one pipeline, as the walk's step of
// discovery and a family page do, so a tick stays one round trip per node.
type Rider interface {
	// Queue queues the rider's commands in pipe. up says whether the
	// master of a key answers; it is nil when every master does. A read
	// sent to a master that does not answer holds up the whole pipeline.
	// A sample read again queues again.
	Queue(ctx context.Context, pipe redis.Pipeliner, up func(key string) bool)
	// Read takes the replies once the pipeline ran, at Redis time at;
	// cmds are every command of that pipeline. An error fails the sample.
	Read(at time.Time, cmds []redis.Cmder) error
}

// Sampled is what a sample's reads saw beyond the model, for the walk's
// read cadence.
type Sampled struct {
	// SideKeys says, for each hash lock read, whether the read found any
	// of its side keys (a light read's EXISTS counts them).
	SideKeys map[string]bool
	// RingLens are the fields of each limiter's stats ring read;
	// RingChecks those SampleOptions.RingChecks found.
	RingLens, RingChecks map[string]int64
	// Subscribers are the counts of SampleOptions.Subscribers, beside the
	// console's own subscription, by lock name; a failed count is left out.
	Subscribers map[string]int64
	// RegistryTooLarge says the registry holds more records than the
	// console reads (Sample.Registry stays nil): asking again is pointless.
	RegistryTooLarge bool
}

// SampleWith is Sample with what the walk adds to a tick (o), and what the
// reads saw beyond the model. Unlike Sample it leaves Summary.Wait unset:
// the walk completes the sample (idle objects not read repeat their last
// state) and then calls AddWaits.
func (c *Inspector) SampleWith(ctx context.Context, locks, limiters []string, o SampleOptions) (*Sample, *Sampled, error) {
	for attempt := 0; ; attempt++ {
		r := &sampleRead{c: c, ctx: ctx, patterns: c.ObjectPatterns(), opts: o, locks: locks, limiters: limiters}
		again, err := r.run()
		if again == readDone || err != nil {
			return r.s, r.seen, err
		}
		if attempt == 2 {
			return nil, nil, errSampleRetries
		}
		if again == readNoScript { // Redis lost the window script: load it
			if err := c.LoadScripts(ctx); err != nil {
				return nil, nil, err
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

// sampleRead is one pipelined read of a sample: what its objects' reads
// share, then what they found.
type sampleRead struct {
	c               *Inspector
	ctx             context.Context
	patterns        ObjectPatterns
	opts            SampleOptions
	locks, limiters []string
	pipe            redis.Pipeliner
	lockReads       []kindRead
	limReads        []kindRead
	rings           map[string]*redis.MapStringStringCmd
	lingers         map[string]*redis.MapStringStringCmd // SampleOptions.Linger's rings
	checks          map[string]*redis.IntCmd
	scripts         []*redis.Cmd // window reads, which fail with NOSCRIPT when Redis lost the script
	counts          *pubsub.Counts
	clientsLen      *redis.IntCmd
	clients         *redis.MapStringStringCmd
	s               *Sample
	seen            *Sampled
	nowMS, bucket   int64
	skipped         map[string]Unread
}

// run queues the reads, runs the pipeline and parses the replies.
func (r *sampleRead) run() (readAgain, error) {
	c, ctx := r.c, r.ctx
	down := c.nodes.Down()
	var up func(string) bool
	if down != nil {
		r.skipped = map[string]Unread{}
		r.locks = c.skipDown(ctx, r.locks, down, r.skipped)
		r.limiters = c.skipDown(ctx, r.limiters, down, r.skipped)
		// A check is not a read: a name left out is checked next tick.
		r.opts.RingChecks = c.skipDown(ctx, r.opts.RingChecks, down, map[string]Unread{})
		up = func(key string) bool {
			_, bad := down[c.nodes.NodeOf(ctx, key)]
			return !bad
		}
	}
	r.pipe = c.rdb.Pipeline()
	var now *redis.TimeCmd
	if down == nil { // a keyless command may be sent to any master
		now = r.pipe.Time(ctx)
	}
	if r.opts.Rider != nil {
		r.opts.Rider.Queue(ctx, r.pipe, up)
	}
	r.queue(up)
	lockAt := c.nodes.Times(ctx, r.pipe, r.locks)
	cmds, cut, err := c.nodes.ExecPartial(ctx, r.pipe)
	if err != nil {
		return readDone, err
	}
	if cut {
		// Cut short while a dead master's dials were being retried: the
		// commands of the masters that answered lost their replies too. The
		// dead one's kept their dial errors; leave it out and read again.
		if !c.nodes.MarkFailed(ctx, r.mains(now)) {
			return readDone, errSampleCut
		}
		return readNodeDown, nil
	}
	var at time.Time
	if now != nil {
		at, err = now.Result()
	}
	if now == nil || err != nil {
		// TIME has no key: a Cluster pipeline sends it to any master,
		// possibly the one that is down.
		if at, err = c.nodes.TimeFromLive(ctx, err, down); err != nil {
			return readDone, err
		}
	}
	if noScript(r.scripts) {
		return readNoScript, nil
	}
	r.parse(at)
	r.s.LockAt = lockAt()
	if r.opts.Rider != nil {
		if err := r.opts.Rider.Read(at, cmds); err != nil {
			r.s, r.seen = nil, nil
			return readDone, err
		}
	}
	c.markDown(r.s.Unreadable)
	return readDone, nil
}

// queue queues every object's read, then their stats rings and what o
// asks for besides.
func (r *sampleRead) queue(up func(string) bool) {
	ctx, pipe := r.ctx, r.pipe
	r.lockReads = r.readAll(r.locks, lockReads)
	r.limReads = r.readAll(r.limiters, limiterReads)
	r.rings = make(map[string]*redis.MapStringStringCmd, len(r.locks)+len(r.limiters))
	r.each(func(name string, kr kindRead, ring *redis.MapStringStringCmd) {
		if ring == nil && kr.ringed() {
			r.rings[name] = pipe.HGetAll(ctx, wire.StatsKey(name))
		}
	})
	r.lingers = make(map[string]*redis.MapStringStringCmd, len(r.opts.Linger))
	for _, name := range r.opts.Linger {
		if _, dup := r.rings[name]; !dup && (up == nil || up(wire.StatsKey(name))) {
			r.lingers[name] = pipe.HGetAll(ctx, wire.StatsKey(name))
		}
	}
	r.checks = make(map[string]*redis.IntCmd, len(r.opts.RingChecks))
	for _, name := range r.opts.RingChecks {
		r.checks[name] = pipe.HLen(ctx, wire.StatsKey(name))
	}
	if r.opts.Clients && (up == nil || up(wire.ClientsKey)) {
		r.clientsLen = pipe.HLen(ctx, wire.ClientsKey)
		r.clients = pipe.HGetAll(ctx, wire.ClientsKey)
	}
	r.counts = r.c.queueSubscriberCounts(ctx, pipe, r.opts.Subscribers, up)
}

// each calls fn with every object's name, read and stats ring read (nil
// when none), locks first.
func (r *sampleRead) each(fn func(name string, kr kindRead, ring *redis.MapStringStringCmd)) {
	for i, name := range r.locks {
		fn(name, r.lockReads[i], r.rings[name])
	}
	for i, name := range r.limiters {
		fn(name, r.limReads[i], r.rings[name])
	}
}

// readAll queues the read of each name by the first of reads that takes it.
func (r *sampleRead) readAll(names []string, reads []func(*sampleRead, string) kindRead) []kindRead {
	out := make([]kindRead, len(names))
	for i, name := range names {
		for _, read := range reads {
			if kr := read(r, name); kr != nil {
				out[i] = kr
				break
			}
		}
	}
	return out
}

// mains are the reads that tell which masters did not answer a cut
// pipeline: TIME, each object's own key and stats ring, the ring checks.
func (r *sampleRead) mains(now *redis.TimeCmd) []redis.Cmder {
	var out []redis.Cmder
	if now != nil {
		out = append(out, now)
	}
	r.each(func(_ string, kr kindRead, ring *redis.MapStringStringCmd) {
		out = append(out, kr.own())
		if ring != nil {
			out = append(out, ring)
		}
	})
	for _, cmd := range r.checks {
		out = append(out, cmd)
	}
	return out
}

// parse turns the replies into the Sample: each object by its kind's
// parse, then the stats rings, the checks, the registry and the counts.
func (r *sampleRead) parse(at time.Time) {
	r.nowMS, r.bucket = at.UnixMilli(), BucketOf(at)
	r.s = &Sample{At: at, Stats: make(map[string]Summary, len(r.rings))}
	r.seen = &Sampled{SideKeys: map[string]bool{}}
	if len(r.skipped) > 0 {
		r.s.Unreadable = r.skipped
	}
	r.each(func(name string, kr kindRead, ring *redis.MapStringStringCmd) {
		answers := kr.answers()
		if ring != nil {
			answers = append(answers, ring)
		}
		if !r.c.unreadable(r.ctx, r.s, name, answers...) {
			kr.parse(r, name, ring)
		}
	})
	for name, cmd := range r.rings {
		if _, down := r.s.Unreadable[name]; down {
			continue
		}
		// A ring that is missing or unreadable is an idle object: zero counts.
		fields, _ := cmd.Result()
		sum := summarizeFields(fields, r.bucket)
		sum.Late = lateFields(name, fields)
		r.s.Stats[name] = sum
	}
	if len(r.limiters) > 0 {
		r.seen.RingLens = make(map[string]int64, len(r.limiters))
		for _, name := range r.limiters {
			if _, down := r.s.Unreadable[name]; !down {
				r.seen.RingLens[name] = int64(len(r.rings[name].Val()))
			}
		}
	}
	if len(r.checks) > 0 {
		r.seen.RingChecks = make(map[string]int64, len(r.checks))
		for name, cmd := range r.checks {
			if n, err := cmd.Result(); err == nil {
				r.seen.RingChecks[name] = n
			}
		}
	}
	for _, name := range r.locks {
		if cmd := r.rings[name]; cmd != nil {
			if _, down := r.s.Unreadable[name]; !down {
				r.c.waits.Fold(name, cmd.Val(), r.bucket)
			}
		}
	}
	for _, name := range r.opts.Linger {
		cmd := r.lingers[name]
		if cmd == nil {
			continue
		}
		fields, err := cmd.Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			continue
		}
		sum := summarizeFields(fields, r.bucket)
		sum.Late = lateFields(name, fields)
		r.s.Stats[name] = sum
		r.c.waits.Fold(name, fields, r.bucket)
		r.s.Lingered = append(r.s.Lingered, name)
	}
	if r.clients != nil {
		n, _ := r.clientsLen.Result()
		r.seen.RegistryTooLarge = n > clients.MaxFields
		if fields, err := r.clients.Result(); err == nil && !r.seen.RegistryTooLarge {
			r.s.Registry = clients.Parse(fields, at)
		}
	}
	r.seen.Subscribers = r.counts.Of()
}

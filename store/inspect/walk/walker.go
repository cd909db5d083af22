package walk

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/inspect/internal/nodes"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Source is what the walk needs of the console's inspect.Inspector.
type Source interface {
	Redis() redis.UniversalClient
	ObjectPatterns() inspect.ObjectPatterns
	ForEachNode(ctx context.Context, fn func(ctx context.Context, node *redis.Client) error) error
	// SampleWith reads a tick's objects with the walk's own reads in the
	// same pipeline; AddWaits completes the sample once the cadence filled
	// in the objects not read.
	SampleWith(ctx context.Context, locks, limiters []string, o inspect.SampleOptions) (*inspect.Sample, *inspect.Sampled, error)
	AddWaits(s *inspect.Sample)
	// Announce and RetainAnnounced keep the string kinds store clients
	// announced, which the Inspector reads as their kind.
	Announce(name, kind string)
	RetainAnnounced(keep func(name string) bool)
	// ReadSides completes what a full pass classified.
	ReadSides(ctx context.Context, node redis.Cmdable, locks []inspect.LockInfo, lims []inspect.LimiterInfo, nowMS int64) error
}

// Scan page bounds: a page is one SCAN call, so a large page blocks Redis
// for longer. At 2 µs a key (1M keys, paced) the default budget's pages of
// 3,000-4,000 keys block it 5-9 ms; the cap, reached only with a large
// budget, is about 100 ms.
const (
	minScanPage = 1000
	maxScanPage = 50000
)

// maxCandidates bounds the notified names one tick sizes; the rest wait.
const maxCandidates = 2000

// Options tune a Walker. A nil *Options is the defaults.
type Options struct {
	// Tick is how often Tick runs (default 200 ms).
	Tick time.Duration
	// Pass is how long a reconciliation pass should take (default
	// inspect.DefaultDiscoveryPass).
	Pass time.Duration
	// Budget is the share of one Redis core the console may use, 0 <
	// Budget <= 1 (default inspect.DefaultDiscoveryBudget): the walk paces
	// itself on it less what the tick's other commands cost (pace.go).
	Budget float64
	// IdleEvery is how many ticks apart idle objects are read (default
	// DefaultIdleEvery; 1 reads every object every tick).
	IdleEvery int
	// NoScan turns the paced walk off: only announced and notified names
	// are discovered (the caller reconciles some other way).
	NoScan bool
}

func (o *Options) get() Options {
	var v Options
	if o != nil {
		v = *o
	}
	if v.Tick <= 0 {
		v.Tick = 200 * time.Millisecond
	}
	return v
}

// Walker samples named objects and discovers new ones, one step per tick.
// It is not safe for concurrent use (one sampler goroutine owns it).
type Walker struct {
	src   Source
	match string
	scans bool
	pace  *pacer
	reg   *registryReader
	// clientsDue asks the next Tick to read the client records too
	// (ReadClients); clientsTooMany stops that after one read found more
	// than the console reads.
	clientsDue, clientsTooMany bool
	// carry is the family page the next Tick reads (Carry).
	carry   Carried
	cad     *cadence
	subs    subscriberMemo // subscribers.go
	next    scanStep
	notify  []string                  // suggested names not yet sized
	origin  map[string]inspect.Source // candidates in flight, by name
	rejects *rejectMemory             // hashes the walk found to be no object
	// full is what full passes (Discover) found to be no object, kept
	// across them; the walk's own memory starts from it.
	full   *fullRejects
	ticks  int64
	status Status
	// linger are the locks a read found gone, by the stats bucket the
	// read was in: their rings are read on until the bucket after it is
	// complete (inspect.SampleOptions.Linger), so a wait recorded in the
	// bucket the lock went free in is still counted.
	linger map[string]int64
}

// maxLinger bounds the gone locks whose rings one tick reads: past it a
// wave of releases loses the waits of the bucket each went free in, as
// before lingering.
const maxLinger = 1000

// lingering lists the gone locks whose rings this tick reads: not among
// the names it samples (a lock back again is read in full).
func (w *Walker) lingering(locks []string) []string {
	if len(w.linger) == 0 {
		return nil
	}
	listed := make(map[string]bool, len(locks))
	for _, n := range locks {
		listed[n] = true
	}
	out := make([]string, 0, len(w.linger))
	for n := range w.linger {
		if listed[n] {
			delete(w.linger, n)
			continue
		}
		out = append(out, n)
	}
	return out
}

// lingered notes the locks s found gone and forgets those read long
// enough: their bucket is two behind the sample's, complete everywhere.
func (w *Walker) lingered(s *inspect.Sample, readLocks []string) {
	bucket := inspect.BucketOf(s.At)
	for n, gone := range w.linger {
		if bucket >= gone+2 {
			delete(w.linger, n)
		}
	}
	if len(readLocks) == len(s.Locks) {
		return
	}
	present := make(map[string]bool, len(s.Locks))
	for _, l := range s.Locks {
		present[l.Name] = true
	}
	for _, n := range readLocks {
		if _, down := s.Unreadable[n]; down || present[n] || len(w.linger) >= maxLinger {
			continue
		}
		if w.linger == nil {
			w.linger = map[string]int64{}
		}
		w.linger[n] = bucket
	}
}

// Status is the walk's progress, for the status page and metrics.
type Status struct {
	Scanning bool // the walk SCANs in the sample (else full passes do)
	// PassStarted is when the current pass's first page was read;
	// LastPassEnded and LastPassDuration describe the last complete pass.
	PassStarted      time.Time
	LastPassEnded    time.Time
	LastPassDuration time.Duration
	Passes           int64
	KeysScanned      int64   // SCAN COUNTs sent, summed
	PageCount        int64   // the current SCAN COUNT
	CostPerKeyUsec   float64 // measured Redis CPU µs per key examined; 0 until known
	// Budget is the share of one Redis core the console may use;
	// SamplingShare what its sampling used lately (measured), so the walk
	// may use the rest.
	Budget        float64
	SamplingShare float64
	PassTarget    time.Duration
	// Keyspace is the keys in the database at the last page; BudgetPass
	// the shortest pass over them the budget pays for at the measured
	// cost (0 until known). A pass takes the longer of PassTarget and
	// BudgetPass.
	Keyspace   int64
	BudgetPass time.Duration
	Announced  int64 // names read from the registry
	// RejectsRemembered is how many hashes the walk found to be no object
	// and does not examine again for a few passes; RejectsSkipped counts
	// the listings it did not examine for that (rejects.go).
	RejectsRemembered int
	RejectsSkipped    int64
	Notified          int64 // suggested names queued for sizing
	IdleSkipped       int64 // object reads skipped as idle
}

// New starts discovery through src of the keys matching match ("" means
// every key). It fails with store.ErrInvalid on a budget outside (0, 1].
func New(src Source, match string, o *Options) (*Walker, error) {
	opt := o.get()
	if opt.Budget < 0 || opt.Budget > 1 {
		return nil, &store.ValidationError{Field: "budget", Message: fmt.Sprintf("discovery budget %g is not a share of one core in (0, 1]", opt.Budget)}
	}
	scans := canScan(src) && !opt.NoScan
	w := &Walker{src: src, match: match, scans: scans,
		pace: newPacer(opt.Tick, opt.Pass, opt.Budget), reg: newRegistryReader(),
		cad: newCadence(opt.IdleEvery), origin: map[string]inspect.Source{}, rejects: newRejectMemory(),
		full: &fullRejects{}, subs: subscriberMemo{}}
	w.next = scanStep{match: match, noScan: !w.scans}
	w.status = Status{Scanning: w.scans, Budget: w.pace.budget, PassTarget: w.pace.pass}
	return w, nil
}

// canScan reports whether a Walker can SCAN in the sample: one node (a
// Cluster or Ring pipeline routes by key, and SCAN has none), and no string
// patterns (token locks and counters need a second SCAN type). Otherwise
// the console runs full passes (Discover) and the Walker only takes
// announced and notified names.
func canScan(src Source) bool {
	switch src.Redis().(type) {
	case *redis.ClusterClient, *redis.Ring:
		return false
	}
	return !src.ObjectPatterns().ListsStrings()
}

// Scans reports whether the walker SCANs the keyspace itself.
func (w *Walker) Scans() bool { return w.scans }

// Status is the walk's progress so far.
func (w *Walker) Status() Status { return w.status }

// Suggest hands over names a keyspace notification reported written: a
// known object is read next tick, an unknown one sized and classified.
func (w *Walker) Suggest(names []string) {
	for _, n := range names {
		if wire.IsInternalKey(n) {
			if owner, ok := wire.StatsOwner(n); ok {
				w.cad.touch(owner)
			}
			continue
		}
		if _, known := w.cad.objs[n]; known {
			w.cad.touch(n)
			continue
		}
		if _, busy := w.origin[n]; busy || !inspect.GlobMatch(w.match, n) {
			continue
		}
		w.origin[n] = inspect.SourceNotified
		w.notify = append(w.notify, n)
		w.status.Notified++
	}
}

// ReadClients makes the next Tick read the client registry in its own
// pipeline (inspect.Sample.Registry), so identities cost no round trip of their
// own. A registry of more than clients.MaxFields records is not read.
func (w *Walker) ReadClients() { w.clientsDue = true }

// Carried is reads another room asks a tick to carry in its pipeline, so
// they cost no round trip of their own: a family page (family.Page).
type Carried interface {
	// Queue queues the reads; false when it queued nothing.
	Queue(ctx context.Context, pipe redis.Pipeliner) bool
	// Scans is how many of them are SCAN pages (the walk's own cost).
	Scans() int
	// Collect takes the readings once the pipeline ran (it may list more
	// members on every master of a Cluster after it).
	Collect(ctx context.Context) ([]inspect.FamilyReading, error)
	// Abandon puts the reads back: the pipeline did not run.
	Abandon()
	// Cost is what was sent outside the pipeline, by command name, and
	// the keys SCAN pages examined.
	Cost() (reads map[string]int, scanned int64)
}

// Carry makes the next Tick read p in its own pipeline (on a Cluster,
// listing more members still SCANs every master after it); the readings
// are in inspect.Sample.Families.
func (w *Walker) Carry(p Carried) {
	if w.carry != nil {
		w.carry.Abandon()
	}
	w.carry = p
}

// Tick samples locks and limiters (idle ones only on their turn) with the
// walk's next step in the same pipeline; the step's findings are in
// inspect.Sample.Walk.
func (w *Walker) Tick(ctx context.Context, locks, limiters []string) (*inspect.Sample, error) {
	w.ticks++
	step := w.next
	step.fam, w.carry = w.carry, nil
	step.registry = w.reg
	step.patterns = w.src.ObjectPatterns()
	step.info = w.scans && w.ticks%paceStatsEvery == 1
	if w.scans {
		step.count = w.pace.count(w.next.dbSize, time.Now(), w.next.cursor == 0)
	}
	readLocks, readLims := w.cad.split(locks, limiters)
	rider := &stepRider{step: &step}
	s, seen, err := w.src.SampleWith(ctx, readLocks, readLims, inspect.SampleOptions{
		Light: w.cad.light, RingChecks: w.cad.ringChecks, Subscribers: w.cad.countDue(maxCountedPerTick),
		Clients: w.clientsDue && !w.clientsTooMany, Rider: rider, Linger: w.lingering(locks)})
	w.clientsDue = false
	if err != nil {
		w.cad.tick-- // the same names are due again next tick
		if step.fam != nil {
			step.fam.Abandon()
		}
		return nil, err
	}
	if step.fam != nil {
		s.Families, s.FamiliesErr = step.fam.Collect(ctx)
	}
	w.status.IdleSkipped += int64(len(locks) - len(readLocks) + len(limiters) - len(readLims))
	w.lingered(s, readLocks)
	w.cad.merge(s, seen, locks, limiters, readLocks, readLims)
	w.src.AddWaits(s)
	w.cad.forget(locks, limiters)
	r := rider.res
	w.countsRead(s.Locks, seen.Subscribers)
	w.account(&step, r, s.At, rider.sent)
	if step.fam != nil {
		w.charge(step.fam.Cost())
	}
	// A registry past the bound is read no more: its HGETALL would be the
	// tick's largest reply.
	w.clientsTooMany = w.clientsTooMany || seen.RegistryTooLarge
	s.Walk = w.advance(ctx, &step, r, s.At, locks, limiters)
	return s, nil
}

// advance takes what step found (r, read at Redis time at): the objects
// not among the names sampled (locks, limiters) are the step's findings,
// announced names are read at once, and the next step sizes and reads
// what this one listed.
func (w *Walker) advance(ctx context.Context, step *scanStep, r *scanResult, at time.Time, locks, limiters []string) *inspect.WalkStep {
	known := make(map[string]bool, len(locks)+len(limiters)+len(r.locks)+len(r.limiters))
	for _, names := range [][]string{locks, limiters} {
		for _, n := range names {
			known[n] = true
		}
	}
	next := scanStep{match: w.match, noScan: !w.scans, cursor: r.cursor, dbSize: r.dbSize}
	if now := w.freshAnnounced(r.announced, known); len(now.read)+len(now.readStr) > 0 {
		if fr, err := w.readNow(ctx, &now, at.UnixMilli()); err == nil {
			r.locks = append(r.locks, fr.locks...)
			r.limiters = append(r.limiters, fr.limiters...)
			step.read = append(step.read, now.read...)
			step.readStr = append(step.readStr, now.readStr...)
		} else { // read them with the next tick instead
			next.read = append(next.read, now.read...)
			next.readStr = append(next.readStr, now.readStr...)
		}
	}
	ws := &inspect.WalkStep{PassEnded: w.scans && r.cursor == 0, Skipped: r.skipped, Sources: map[string]inspect.Source{}}
	for _, l := range r.locks {
		if !known[l.Name] {
			known[l.Name] = true
			ws.Locks = append(ws.Locks, l)
			ws.Sources[l.Name] = w.sourceOf(l.Name)
		}
	}
	for _, l := range r.limiters {
		if !known[l.Name] {
			known[l.Name] = true
			ws.Limiters = append(ws.Limiters, l)
			ws.Sources[l.Name] = w.sourceOf(l.Name)
		}
	}
	w.remember(r, ws)
	for _, names := range [][]string{step.read, step.readStr, step.readZ} { // read and classified (or not an object)
		for _, n := range names {
			delete(w.origin, n)
		}
	}
	for _, k := range r.small {
		if !known[k] {
			next.read = append(next.read, k)
		}
	}
	// Typed: hashes are sized, sorted sets and claimed strings read.
	for _, typed := range []struct {
		keys []string
		to   *[]string
	}{{r.hashes, &next.size}, {r.zsets, &next.readZ}, {r.strs, &next.readStr}} {
		for _, k := range typed.keys {
			if !known[k] {
				*typed.to = append(*typed.to, k)
			}
		}
	}
	for _, keys := range [][]string{r.untyped, r.gone} {
		for _, k := range keys {
			if w.origin[k] == inspect.SourceNotified {
				delete(w.origin, k) // typed out: gone, or no candidate type
			}
		}
	}
	for _, k := range step.size {
		if !slices.Contains(r.small, k) && w.origin[k] == inspect.SourceNotified {
			delete(w.origin, k) // sized out: gone, empty or large
		}
	}
	for _, k := range r.keys {
		switch {
		case known[k]:
		case w.rejects.skip(k, w.status.Passes):
			w.status.RejectsSkipped++
		default:
			next.typ = append(next.typ, k)
		}
	}
	if ws.PassEnded {
		w.rejects.sweep(w.status.Passes)
	}
	w.status.RejectsRemembered = w.rejects.len()
	n := min(len(w.notify), maxCandidates)
	for _, k := range w.notify[:n] {
		if !known[k] && w.origin[k] == inspect.SourceNotified {
			next.typ = append(next.typ, k)
		}
	}
	w.notify = append(w.notify[:0], w.notify[n:]...)
	w.next = next
	w.src.RetainAnnounced(func(name string) bool {
		_, busy := w.origin[name]
		return busy || known[name]
	})
	return ws
}

// remember records the hashes the walk listed itself and found to be no
// object (rejects.go), and forgets the names found to be objects. Names
// announced or notified are never remembered: they were written lately.
func (w *Walker) remember(r *scanResult, ws *inspect.WalkStep) {
	for _, names := range [][]string{r.large, r.none, r.untyped} {
		for _, k := range names {
			if _, named := w.origin[k]; !named {
				w.rejects.add(k, w.status.Passes)
			}
		}
	}
	for _, l := range ws.Locks {
		w.rejects.drop(l.Name)
	}
	for _, l := range ws.Limiters {
		w.rejects.drop(l.Name)
	}
}

// freshAnnounced takes the names the registry announced this tick that
// are not known yet: string kinds are remembered as announced and read as
// strings, the others as hashes.
func (w *Walker) freshAnnounced(members []string, known map[string]bool) scanStep {
	now := scanStep{noScan: true}
	for _, m := range members {
		k, kind := wire.ParseAnnounced(m)
		if known[k] || !inspect.GlobMatch(w.match, k) || wire.IsInternalKey(k) || w.src.ObjectPatterns().Grouped(k) {
			continue
		}
		if src, busy := w.origin[k]; busy && src != inspect.SourceNotified {
			continue
		}
		w.origin[k] = inspect.SourceAnnounced
		if kind != "" {
			w.src.Announce(k, kind)
			now.readStr = append(now.readStr, k)
		} else {
			now.read = append(now.read, k)
		}
	}
	return now
}

// readNow reads and classifies step's names in a pipeline of their own.
func (w *Walker) readNow(ctx context.Context, step *scanStep, nowMS int64) (*scanResult, error) {
	step.patterns = w.src.ObjectPatterns()
	pipe := w.src.Redis().Pipeline()
	r := queueScan(ctx, pipe, step)
	if err := nodes.Exec(ctx, pipe); err != nil {
		return nil, err
	}
	return r.result(nowMS)
}

func (w *Walker) sourceOf(name string) inspect.Source {
	if src, ok := w.origin[name]; ok {
		return src
	}
	return inspect.SourceScan
}

// account updates pacing and status after a step.
func (w *Walker) account(step *scanStep, r *scanResult, at time.Time, sent map[string]int) {
	w.status.Announced += int64(len(r.announced))
	if !w.scans {
		return
	}
	w.pace.countSent(sent, step.walkCommands())
	if r.infoOK {
		w.pace.observe(r.cost, at)
	}
	w.pace.sent(step.count, len(step.read))
	if step.cursor == 0 {
		w.status.PassStarted = at
	}
	w.status.KeysScanned += step.count
	w.status.PageCount = step.count
	w.status.CostPerKeyUsec = w.pace.costPerKey
	w.status.SamplingShare = w.pace.sampleShare
	w.status.Keyspace = r.dbSize
	w.status.BudgetPass = w.pace.budgetPass(r.dbSize)
	if r.cursor == 0 && !w.status.PassStarted.IsZero() {
		w.status.Passes++
		w.status.LastPassEnded = at
		w.status.LastPassDuration = at.Sub(w.status.PassStarted)
	}
}

// charge counts a page the walk carried in its pacing: what it sent
// outside the tick's pipeline as the console's other commands, its SCAN
// pages' keys as keys the walk's SCAN usec paid for (Redis counts both in
// one cmdstat_scan).
func (w *Walker) charge(reads map[string]int, scanned int64) {
	if w.scans {
		w.pace.countSent(reads, nil)
		w.pace.keys += scanned
	}
}

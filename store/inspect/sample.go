package inspect

import (
	"context"
	"time"

	"github.com/lockwarden/lockwarden/store"
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
	scan     *scanResult
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
func (c *Inspector) Sample(ctx context.Context, locks, limiters []string) (*Sample, error) {
	return c.sampleWith(ctx, locks, limiters, nil)
}

// sampleWith is Sample with one step of the walk in the same pipeline (its
// findings in Sample.scan); step may be nil.
func (c *Inspector) sampleWith(ctx context.Context, locks, limiters []string, step *scanStep) (*Sample, error) {
	s, retry, err := c.sample(ctx, locks, limiters, step)
	if retry { // Redis lost the window script: load it and read once more
		if err := c.loadStateScript(ctx); err != nil {
			return nil, err
		}
		s, _, err = c.sample(ctx, locks, limiters, step)
	}
	return s, err
}

// sample is one pipelined read; retry says a window read found no script.
func (c *Inspector) sample(ctx context.Context, locks, limiters []string, step *scanStep) (*Sample, bool, error) {
	patterns := c.ObjectPatterns()
	pipe := c.rdb.Pipeline()
	now := pipe.Time(ctx)
	var scan *scanReads
	if step != nil {
		scan = queueScan(ctx, pipe, step)
	}
	type lockRead struct {
		fields *redis.MapStringStringCmd
		pttl   *redis.DurationCmd
		sides  *lockSides
		str    *stringRead // token locks are strings
	}
	lockReads := make([]lockRead, len(locks))
	for i, name := range locks {
		if patterns.isTokenLockName(name) {
			sr := queueStringRead(ctx, pipe, name)
			lockReads[i] = lockRead{str: &sr, sides: &lockSides{held: queueHoldTimes(ctx, pipe, name)}}
			continue
		}
		lockReads[i] = lockRead{fields: pipe.HGetAll(ctx, name), pttl: pipe.PTTL(ctx, name),
			sides: queueRLockSides(ctx, pipe, name)}
	}
	type limRead struct {
		fields *redis.MapStringStringCmd
		window *redis.Cmd  // a Redisson limiter's window (nothing for others)
		str    *stringRead // counters are strings
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
	for _, names := range [][]string{locks, limiters} {
		for _, name := range names {
			if _, ok := rings[name]; !ok {
				rings[name] = pipe.HGetAll(ctx, store.StatsKey(name))
			}
		}
	}
	if err := execTolerant(ctx, pipe); err != nil {
		return nil, false, err
	}
	if err := now.Err(); err != nil {
		return nil, false, err
	}
	windows := make([]*redis.Cmd, 0, len(limReads))
	for _, r := range limReads {
		windows = append(windows, r.window)
	}
	if noScript(windows) {
		return nil, true, nil
	}

	at := now.Val()
	nowMS, bucket := at.UnixMilli(), BucketOf(at)
	s := &Sample{At: at, Stats: make(map[string]Summary, len(rings))}
	for i, name := range locks {
		if r := lockReads[i].str; r != nil {
			if info, _ := r.classify(patterns, name); info != nil {
				lockReads[i].sides.apply(info, nowMS) // hold times
				s.Locks = append(s.Locks, *info)
			}
			continue
		}
		fields, err := lockReads[i].fields.Result()
		if err != nil {
			continue
		}
		if info, ok := classifyLock(name, fields, lockReads[i].pttl.Val()); ok {
			lockReads[i].sides.apply(&info, nowMS)
			s.Locks = append(s.Locks, info)
		}
	}
	for i, name := range limiters {
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
		// A ring that is missing or unreadable is an idle object: zero counts.
		fields, _ := cmd.Result()
		s.Stats[name] = summarizeFields(fields, bucket)
	}
	if scan != nil {
		res, err := scan.result(nowMS)
		if err != nil {
			return nil, false, err
		}
		s.scan = res
	}
	return s, false, nil
}

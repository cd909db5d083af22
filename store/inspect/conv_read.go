package inspect

import (
	"context"
	"fmt"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect/internal/nodes"
	"github.com/redis/go-redis/v9"
)

// Reading framework conventions: a sample reads a name the memory knows
// (or a string a convention claims) with its key type's read and the
// convention's side reads, in the tick's one pipeline; GetLock and
// GetLimiter read any name by its type.

// convRead is one key's read by its type, plus its convention's side reads.
type convRead struct {
	keyType string
	str     stringRead
	fields  *redis.MapStringStringCmd
	pttl    *redis.DurationCmd
	z       zsetRead
	side    func(*convFound)
}

// queueConvRead queues the read of name as a key of keyType, with c's side
// reads (c may be nil: not known yet).
func queueConvRead(ctx context.Context, pipe redis.Pipeliner, name, keyType string, c *convention) *convRead {
	x := &convRead{keyType: keyType}
	switch keyType {
	case "string":
		x.str = queueStringRead(ctx, pipe, name)
	case "hash":
		x.fields, x.pttl = pipe.HGetAll(ctx, name), pipe.PTTL(ctx, name)
	case "zset":
		x.z = queueZsetRead(ctx, pipe, name)
	}
	if c != nil && c.side != nil {
		x.side = c.side(ctx, pipe, name)
	}
	return x
}

// own is the read of the key itself.
func (x *convRead) own() redis.Cmder {
	switch x.keyType {
	case "string":
		return x.str.strlen
	case "hash":
		return x.fields
	}
	return x.z.card
}

// found classifies what was read.
func (x *convRead) found(p ObjectPatterns, name string, nowMS int64) (*LockInfo, *LimiterInfo) {
	var f convFound
	switch x.keyType {
	case "string":
		f.lock, f.lim = x.str.classify(p, name, nowMS)
	case "hash":
		fields, err := x.fields.Result()
		if err != nil || len(fields) == 0 {
			return nil, nil
		}
		if l, ok := classifyLock(name, fields, x.pttl.Val()); ok {
			f.lock = &l
		} else if l, ok := classifyLimiter(name, fields, nowMS); ok {
			f.lim = &l
		}
	case "zset":
		f.lock, f.lim = x.z.classify(p, name, nowMS)
	}
	if x.side != nil {
		x.side(&f)
	}
	if f.lock == nil && f.lim == nil {
		p.conv.forget(name)
	} else if f.lock != nil {
		p.rememberConvention(name, f.lock.Kind, x.keyType)
	} else {
		p.rememberConvention(name, f.lim.Kind, x.keyType)
	}
	return f.lock, f.lim
}

// convKeyType is how a sample reads name when it may be a convention: the
// type of the convention it was classified as (the walk and GetLock
// remember it), or, once the memory is full, "string" when one claims it;
// "" leaves it to lockwarden's own reads (and names a store client
// announced always are). A name's claim alone never decides: a hash lock
// may well be named like a string convention's keys.
func (p ObjectPatterns) convKeyType(name string) (string, *convention) {
	if p.announced.kind(name) != "" {
		return "", nil
	}
	if c := p.conv.of(name); c != nil {
		return c.keyType, c
	}
	if p.conv != nil && p.conv.n.Load() >= maxConvMemo && p.claimsString(name) {
		return "string", nil
	}
	return "", nil
}

// convSampleRead is a convention object in a sample.
type convSampleRead struct {
	read    *convRead
	limiter bool
}

func readConvention(limiter bool) func(r *sampleRead, name string) kindRead {
	return func(r *sampleRead, name string) kindRead {
		typ, c := r.patterns.convKeyType(name)
		if typ == "" || (c != nil && c.limiter != limiter) {
			return nil
		}
		return &convSampleRead{read: queueConvRead(r.ctx, r.pipe, name, typ, c), limiter: limiter}
	}
}

func (x *convSampleRead) own() redis.Cmder       { return x.read.own() }
func (x *convSampleRead) answers() []redis.Cmder { return []redis.Cmder{x.read.own()} }
func (x *convSampleRead) ringed() bool           { return true }

func (x *convSampleRead) parse(r *sampleRead, name string, _ *redis.MapStringStringCmd) {
	lock, lim := x.read.found(r.patterns, name, r.nowMS)
	switch {
	case !x.limiter && lock != nil:
		r.s.Locks = append(r.s.Locks, *lock)
	case x.limiter && lim != nil:
		r.s.Limiters = append(r.s.Limiters, *lim)
	}
}

// readByType reads the key at name by its type, as GetLock and GetLimiter
// do: TYPE first, then the read of that type (a string only when a
// convention or a pattern claims it) with Redis time, and the side reads
// of the convention it turns out to be. typ is the key's type.
func (c *Inspector) readByType(ctx context.Context, name string) (lock *LockInfo, lim *LimiterInfo, typ string, nowMS int64, err error) {
	typ, err = c.rdb.Type(ctx, name).Result()
	if err != nil {
		return nil, nil, "", 0, err
	}
	p := c.ObjectPatterns()
	switch typ {
	case "none":
		return nil, nil, typ, 0, store.ErrNotFound
	case "string":
		if _, counter := p.counterRule(name); !counter && !p.isTokenLockName(name) && !p.claimsString(name) {
			return nil, nil, typ, 0, nil
		}
	case "hash", "zset":
	default:
		return nil, nil, typ, 0, nil
	}
	pipe := c.rdb.TxPipeline()
	now := pipe.Time(ctx)
	known := p.conv.of(name)
	if known != nil && known.keyType != typ {
		known = nil
	}
	x := queueConvRead(ctx, pipe, name, typ, known)
	if err := nodes.Exec(ctx, pipe); err != nil && !isWrongType(err) {
		return nil, nil, typ, 0, err
	}
	if err := now.Err(); err != nil {
		return nil, nil, typ, 0, err
	}
	nowMS = now.Val().UnixMilli()
	lock, lim = x.found(p, name, nowMS)
	// A convention first met here has side reads of its own (which may
	// find it is not that convention after all).
	if cv := p.conv.of(name); cv != nil && cv != known && cv.side != nil {
		pipe := c.rdb.Pipeline()
		apply := cv.side(ctx, pipe, name)
		if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
			return nil, nil, typ, 0, err
		}
		f := convFound{lock: lock, lim: lim}
		apply(&f)
		if lock, lim = f.lock, f.lim; lock == nil && lim == nil {
			p.conv.forget(name)
		}
	}
	return lock, lim, typ, nowMS, nil
}

// resetConvention resets the convention limiter at name as its library
// does; ok false when name holds no convention limiter.
func (c *Inspector) resetConvention(ctx context.Context, name string) (ok bool, err error) {
	_, lim, typ, _, err := c.readByType(ctx, name)
	if err != nil || lim == nil {
		return false, err
	}
	cv := conventionOf(lim.Kind, typ)
	if cv == nil || cv.reset == nil {
		return false, nil
	}
	code, err := cv.reset(ctx, c, lim)
	if err != nil {
		return true, fmt.Errorf("store: reset %q: %w", name, err)
	}
	switch code {
	case 1:
		return true, nil
	case 0:
		return true, fmt.Errorf("store: reset %q: %w", name, store.ErrNotFound)
	}
	return true, fmt.Errorf("store: reset %q: %w", name, store.ErrWrongKind)
}

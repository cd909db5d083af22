package inspect

import (
	"context"
	"fmt"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect/conv"
	"github.com/lockwarden/lockwarden/store/inspect/internal/hashread"
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
	side    conv.Side
}

// queueConvRead queues the read of name as a key of keyType, with c's side
// reads (c may be nil: not known yet).
func queueConvRead(ctx context.Context, pipe redis.Pipeliner, name, keyType string, c *conv.Convention) *convRead {
	x := &convRead{keyType: keyType}
	switch keyType {
	case "string":
		x.str = queueStringRead(ctx, pipe, name)
	case "hash":
		x.fields, x.pttl = pipe.HGetAll(ctx, name), pipe.PTTL(ctx, name)
	case "zset":
		x.z = queueZsetRead(ctx, pipe, name)
	}
	if c != nil {
		x.side = c.QueueSide(ctx, pipe, name)
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
func (x *convRead) found(p ObjectPatterns, name string, nowMS int64) (lock *LockInfo, lim *LimiterInfo) {
	switch x.keyType {
	case "string":
		lock, lim = x.str.classify(p, name, nowMS)
	case "hash":
		fields, err := x.fields.Result()
		if err != nil || len(fields) == 0 {
			return nil, nil
		}
		if l, ok := classifyLock(name, fields, x.pttl.Val()); ok {
			lock = &l
		} else if l, ok := classifyLimiter(name, fields, nowMS); ok {
			lim = &l
		}
	case "zset":
		lock, lim = x.z.classify(p, name, nowMS)
	}
	lock = applySide(x.side, lock)
	if lock == nil && lim == nil {
		p.conv.Forget(name)
	} else if lock != nil {
		p.rememberConvention(name, lock.Kind, x.keyType)
	} else {
		p.rememberConvention(name, lim.Kind, x.keyType)
	}
	return lock, lim
}

// convKeyType is how a sample reads name when it may be a convention: the
// type of the convention it was classified as (the walk and GetLock
// remember it), or, once the memory is full, "string" when one claims it;
// "" leaves it to lockwarden's own reads (and names a store client
// announced always are). A name's claim alone never decides: a hash lock
// may well be named like a string convention's keys.
func (p ObjectPatterns) convKeyType(name string) (string, *conv.Convention) {
	if p.announced.kind(name) != "" {
		return "", nil
	}
	if c := p.conv.Of(name); c != nil {
		return c.KeyType(), c
	}
	if p.conv.Full() && p.claimsString(name) {
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
		if typ == "" || (c != nil && c.Limiter() != limiter) {
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

// keyRead is what readByType found at a name.
type keyRead struct {
	typ   string // the key's type; "none" when it does not exist
	lock  *LockInfo
	lim   *LimiterInfo
	nowMS int64
	hash  hashread.Reply // a hash's read (typ "hash")
}

// wrongKind is store.ErrWrongKind for a key that is no object of what's
// kind, saying why when it was a hash too large to read.
func (r keyRead) wrongKind(what, name string) error {
	if r.typ == "hash" {
		return r.hash.WrongKind(what, name)
	}
	return fmt.Errorf("store: %s %q: %w", what, name, store.ErrWrongKind)
}

// readByType reads the key at name as GetLock and GetLimiter do, whatever
// it holds: a string a pattern or a convention claims with readString, any
// other name with hash_read.lua (which sizes a hash before it transfers
// it), and, when that finds no hash, a sorted set with a bounded read. The
// convention it turns out to be adds its side reads (which may find it is
// not that convention after all). ErrNotFound when there is no key.
func (c *Inspector) readByType(ctx context.Context, name string) (keyRead, error) {
	p := c.ObjectPatterns()
	var r keyRead
	if _, counter := p.counterRule(name); counter || p.isTokenLockName(name) || p.claimsString(name) {
		typ, now, str, err := c.readString(ctx, name)
		if err != nil {
			return r, err
		}
		r.typ, r.nowMS = typ, now
		if typ == "string" {
			r.lock, r.lim = str.classify(p, name, now)
		}
	}
	if r.typ == "" || r.typ == "hash" {
		h, err := hashread.Read(ctx, c.rdb, name, MaxHashFields)
		if err != nil {
			return r, err
		}
		r.hash, r.nowMS = h, h.NowMS
		switch {
		case h.Size == 0:
			r.typ = "none"
		case h.Size > 0:
			r.typ = "hash"
			if l, ok := classifyLock(name, h.Fields, h.PTTL); ok {
				r.lock = &l
			} else if l, ok := classifyLimiter(name, h.Fields, h.NowMS); ok {
				r.lim = &l
			}
			switch { // a convention's hash is read as one from now on
			case r.lock != nil:
				p.rememberConvention(name, r.lock.Kind, "hash")
			case r.lim != nil:
				p.rememberConvention(name, r.lim.Kind, "hash")
			}
		default:
			r.typ = ""
		}
	}
	if r.typ == "" { // neither a claimed string nor a hash: a sorted set?
		pipe := c.rdb.TxPipeline()
		t, now := pipe.Type(ctx, name), pipe.Time(ctx)
		z := queueZsetRead(ctx, pipe, name)
		if err := nodes.Exec(ctx, pipe); err != nil && !isWrongType(err) {
			return r, err
		}
		if err := now.Err(); err != nil {
			return r, err
		}
		r.typ, r.nowMS = t.Val(), now.Val().UnixMilli()
		if r.typ == "zset" {
			r.lock, r.lim = z.classify(p, name, r.nowMS)
		}
	}
	if r.typ == "none" {
		return r, ErrNotFound
	}
	if cv := p.conv.Of(name); cv != nil && cv.KeyType() == r.typ && (r.lock != nil || r.lim != nil) {
		pipe := c.rdb.Pipeline()
		if side := cv.QueueSide(ctx, pipe, name); side.Read != nil {
			if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
				return r, err
			}
			if r.lock = applySide(side, r.lock); r.lock == nil && r.lim == nil {
				p.conv.Forget(name)
			}
		}
	}
	return r, nil
}

// resetConvention resets the convention limiter at name as its library
// does; ok false when name holds no convention limiter.
func (c *Inspector) resetConvention(ctx context.Context, name string) (ok bool, err error) {
	r, err := c.readByType(ctx, name)
	if err != nil || r.lim == nil {
		return false, err
	}
	lim := r.lim
	cv := conv.Of(string(lim.Kind), r.typ)
	if cv == nil || !cv.Resets() {
		return false, nil
	}
	code, err := cv.Reset(ctx, c.rdb, lim.Name)
	if err != nil {
		return true, fmt.Errorf("store: reset %q: %w", name, wrongKindErr(err))
	}
	switch code {
	case 1:
		return true, nil
	case 0:
		return true, fmt.Errorf("store: reset %q: %w", name, ErrNotFound)
	}
	return true, fmt.Errorf("store: reset %q: %w", name, store.ErrWrongKind)
}

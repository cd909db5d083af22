package history

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store"
)

const (
	memberLimiter = "limiter:"
	memberLock    = "lock:"
)

// write sends everything that changed since the last flush, for the kept
// objects, and deletes the history of objects no longer kept: one
// pipeline (which a Cluster client splits into one per node).
func (w *worker) write(ctx context.Context, now int64, limTop, lockTop []ranking) error {
	o := w.opt()
	pipe := w.h.rdb.Pipeline()
	var zadd []redis.Z
	kept := make(map[string]bool, len(limTop)+len(lockTop))
	fineMS := FineStep.Milliseconds()
	fromE := max(w.through-1, 0) / fineMS // the step of the last flush is rewritten whole
	// A step that began before this replica's first sample was seen in
	// part; when the writer before it wrote that step, its count stands.
	partly := func(e int64, step time.Duration) bool {
		begin := e * step.Milliseconds()
		return begin < w.t.firstAt && begin < w.inherited
	}
	per := int64(CoarseStep / FineStep)

	for _, r := range limTop {
		name, member := r.name, memberLimiter+r.name
		kept[member] = true
		l := w.t.limiters[name]
		var minutes []int64
		fine, coarse := FineKey(name), CoarseKey(name)
		for _, s := range l.recent {
			if s.e < fromE || s.e == 0 || s.c.zero() || partly(s.e, FineStep) {
				continue
			}
			if len(minutes) == 0 {
				w.touch(ctx, pipe, fine, o.nFine*recordSize, o.fine, now)
				w.touch(ctx, pipe, coarse, o.nCoarse*recordSize, o.coarse, now)
			}
			pipe.SetRange(ctx, fine, (s.e%int64(o.nFine))*recordSize, encodeRecord(s.e, s.c))
			if m := s.e / per; !slices.Contains(minutes, m) {
				minutes = append(minutes, m)
			}
		}
		for _, m := range minutes {
			if partly(m, CoarseStep) {
				continue
			}
			pipe.SetRange(ctx, coarse, (m%int64(o.nCoarse))*recordSize, encodeRecord(m, l.minute(m)))
		}
		if len(minutes) > 0 || w.index[member] {
			zadd = append(zadd, redis.Z{Score: r.score, Member: member})
		}
	}

	holdTTL := strconv.FormatInt((o.coarse + CoarseStep).Milliseconds(), 10)
	var lockCmds []*redis.Cmd
	for _, r := range lockTop {
		name, member := r.name, memberLock+r.name
		kept[member] = true
		l := w.t.locks[name]
		waited := w.writeWaits(ctx, pipe, name, l, max(w.through-1, 0)/CoarseStep.Milliseconds(), now, partly)
		replace := !w.opened[name]
		args := w.holdArgs(l, holdTTL, replace)
		if args == nil {
			if waited || w.index[member] {
				zadd = append(zadd, redis.Z{Score: r.score, Member: member})
			}
			continue
		}
		keys := []string{OpenKey(name), HoldsKey(name)}
		lockCmds = append(lockCmds, holdWrite.Queue(ctx, pipe, keys, args...))
		w.opened[name] = true
		l.openDirty = false
		zadd = append(zadd, redis.Z{Score: r.score, Member: member})
	}

	var zrem []any
	for member := range w.index {
		if kept[member] {
			continue
		}
		zrem = append(zrem, member)
		// A ring deleted is allocated again if the object comes back.
		if name, ok := strings.CutPrefix(member, memberLimiter); ok {
			pipe.Del(ctx, FineKey(name), CoarseKey(name))
			delete(w.touched, FineKey(name))
			delete(w.touched, CoarseKey(name))
		} else if name, ok := strings.CutPrefix(member, memberLock); ok {
			pipe.Del(ctx, OpenKey(name), HoldsKey(name), WaitKey(name))
			delete(w.opened, name)
			delete(w.touched, WaitKey(name))
		}
	}
	if len(zrem) > 0 {
		pipe.ZRem(ctx, IndexKey, zrem...)
	}
	if len(zadd) > 0 {
		pipe.ZAdd(ctx, IndexKey, zadd...)
	}
	pipe.HSet(ctx, MetaKey, "through", now, "writer", w.opt().id)

	cmds := pipe.Cmds()
	_, err := pipe.Exec(ctx)
	err = w.retryNoScript(ctx, err, cmds, lockCmds)
	var bytes int64
	for _, c := range cmds {
		for _, a := range c.Args() {
			bytes += argLen(a)
		}
	}
	if err != nil {
		// Nothing is known to be written: the next flush sends it all again
		// (ring writes are absolute, history_hold_write skips entries already
		// pushed), and replaces the running holds.
		w.opened = map[string]bool{}
		return fmt.Errorf("history: flush: %w", err)
	}
	for _, z := range zadd {
		w.index[z.Member.(string)] = true
	}
	for _, m := range zrem {
		delete(w.index, m.(string))
	}
	w.through = now
	w.h.setStats(func(s *Stats) {
		s.LastFlush = time.UnixMilli(now)
		s.Flushes++
		s.FlushCommands, s.FlushBytes = len(cmds), bytes
	})
	return nil
}

// holdArgs are hold_write's ARGV for l, nil when nothing changed.
func (w *worker) holdArgs(l *lock, ttl string, replace bool) []any {
	var closed []closedHold
	for _, c := range l.closed {
		if c.closedAt > w.through {
			closed = append(closed, c)
		}
	}
	if len(closed) == 0 && !l.openDirty && !replace {
		return nil
	}
	if len(closed) == 0 && len(l.open) == 0 && replace && !l.openDirty {
		return nil // nothing running, nothing ended: no key to create
	}
	flag := "0"
	if replace {
		flag = "1"
	}
	args := make([]any, 0, 4+3*len(closed)+2*len(l.open))
	args = append(args, w.opt().holds, ttl, flag, len(closed))
	for _, c := range closed {
		e := encodeClosed(c)
		if c.workedTo > c.to {
			e = tokenWorkedTo + strconv.FormatInt(c.workedTo, 10) + " " + e
		}
		w.entryB += int64(len(e) + len(c.ended) + 1)
		w.entryN++
		args = append(args, c.h.ID, c.ended, e)
	}
	for _, o := range l.open {
		args = append(args, o.h.ID, encodeOpen(o))
	}
	return args
}

// writeWaits writes l's wait minutes from minute fromM on (the minute of
// the last flush is rewritten whole) into its ring, and reports whether
// it wrote any. A minute that began before this replica's first sample
// is left as the writer before it wrote it (partly).
func (w *worker) writeWaits(ctx context.Context, pipe redis.Pipeliner, name string, l *lock, fromM, now int64,
	partly func(int64, time.Duration) bool) bool {
	o := w.opt()
	key := WaitKey(name)
	wrote := false
	for i := range l.waits {
		s := &l.waits[i]
		if s.m < fromM || s.m == 0 || s.w.zero() || partly(s.m, CoarseStep) {
			continue
		}
		if !wrote {
			w.touch(ctx, pipe, key, o.nCoarse*waitRecordSize, o.coarse, now)
			wrote = true
		}
		pipe.SetRange(ctx, key, (s.m%int64(o.nCoarse))*waitRecordSize, encodeWait(s.m, &s.w))
	}
	return wrote
}

// touch allocates a ring at its full length, size bytes (a SETRANGE past
// the last record: Redis then never grows the string by doubling it) and
// refreshes its expiry, at the first write of a writer's term and every
// eighth of the retention after.
func (w *worker) touch(ctx context.Context, pipe redis.Pipeliner, key string, size int, retention time.Duration, now int64) {
	every := retention / 8
	if last, ok := w.touched[key]; ok && now-last < every.Milliseconds() {
		return
	}
	w.touched[key] = now
	pipe.SetRange(ctx, key, int64(size), "\x00")
	pipe.PExpire(ctx, key, retention+every)
}

// retryNoScript runs again, with the script's text, the hold writes a node
// refused with NOSCRIPT (its script cache was flushed, or it was promoted
// from a replica that never loaded it): such a call did nothing, so
// sending it again is its first run. Any other failure fails the flush.
func (w *worker) retryNoScript(ctx context.Context, err error, all []redis.Cmder, lockCmds []*redis.Cmd) error {
	if err == nil {
		return nil
	}
	for _, c := range all {
		if c.Err() != nil && !redis.HasErrorPrefix(c.Err(), "NOSCRIPT") {
			return err
		}
	}
	return store.EvalNoScript(ctx, w.h.rdb, lockCmds)
}

// argLen is about the bytes an argument takes on the wire.
func argLen(a any) int64 {
	switch v := a.(type) {
	case string:
		return int64(len(v))
	case []byte:
		return int64(len(v))
	default:
		return int64(len(fmt.Sprint(v)))
	}
}

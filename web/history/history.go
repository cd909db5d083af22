package history

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store"
)

// History records and reads the console's history. Observe, Ended, Flush
// and Close go through one goroutine that owns every piece of state; the
// reads go straight to Redis and share nothing with it.
type History struct {
	rdb  redis.UniversalClient
	opt  resolved
	msgs chan msg
	done chan struct{}
	stop context.CancelFunc

	dropped atomic.Int64
	closeMu sync.Once

	statsMu sync.Mutex
	stats   Stats
}

// msg is one request to the goroutine; exactly one field is set.
type msg struct {
	sample *Sample
	ended  *endedReq
	amend  *amendReq
	flush  chan error
	close  chan error
}

type endedReq struct{ name, holder, how string }

// amendReq is what was heard of a hold after it ended (tracker.amend).
type amendReq struct {
	name, holder, how string
	at                int64
	worked            bool
}

// Stats is what /status shows about the history.
type Stats struct {
	Writer          bool      `json:"writer"` // false: this replica only reads
	ID              string    `json:"id"`
	Keys            int       `json:"keys"`  // history keys in Redis, about
	BytesEstimate   int64     `json:"bytes"` // their memory, about
	LimitersKept    int       `json:"limiters_kept"`
	LimitersOmitted int       `json:"limiters_omitted"` // active, beyond the top
	LocksKept       int       `json:"locks_kept"`
	LocksOmitted    int       `json:"locks_omitted"`
	LastFlush       time.Time `json:"last_flush,omitzero"` // the newest sample time written (by the writer)
	LastError       string    `json:"last_error,omitempty"`
	Flushes         int64     `json:"flushes"`
	Dropped         int64     `json:"dropped"` // samples Observe dropped: the goroutine was busy
	// Flush cost of the last write: commands sent and request bytes.
	FlushCommands int   `json:"flush_commands"`
	FlushBytes    int64 `json:"flush_bytes"`
}

// Open starts a History on rdb (a single node, a Cluster or a Sentinel
// client; the caller keeps and closes it). ctx bounds the History's
// goroutine; Close ends it.
func Open(ctx context.Context, rdb redis.UniversalClient, opts *Options) (*History, error) {
	opt, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	if opt.id == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		opt.id = hex.EncodeToString(b[:])
	}
	ctx, cancel := context.WithCancel(ctx)
	h := &History{rdb: rdb, opt: opt, msgs: make(chan msg, opt.queue), done: make(chan struct{}), stop: cancel}
	h.stats.ID = opt.id
	sc := store.New(rdb, &store.Options{NoRegistry: true})
	w := &worker{h: h, t: newTracker(opt), sc: sc,
		lock: sc.NewLock(WriterLock, &store.LockOptions{Lease: opt.lease, Owner: "history-" + opt.id})}
	go w.run(ctx)
	return h, nil
}

// Observe hands s to the history; it never waits for Redis. When the
// history's goroutine is behind, s is dropped and counted. The caller must
// not change s's slices afterwards.
func (h *History) Observe(ctx context.Context, s Sample) {
	select {
	case h.msgs <- msg{sample: &s}:
	case <-h.done:
	case <-ctx.Done():
	default:
		h.dropped.Add(1)
	}
}

// Ended says the console ended holder's hold of lock name (how is
// EndForceUnlocked), so the hold is recorded as ended that way whichever
// replica writes the history.
func (h *History) Ended(ctx context.Context, name, holder, how string) error {
	switch how {
	case EndForceUnlocked, EndReleased, EndExpired, EndHandedOff:
	default:
		return badParam("how", how, EndForceUnlocked)
	}
	err := holdMark.Run(ctx, h.rdb, []string{OpenKey(name)}, holder, how).Err()
	select {
	case h.msgs <- msg{ended: &endedReq{name, holder, how}}:
	case <-h.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("history: mark %q ended: %w", name, err)
	}
	return nil
}

// Evicted says Redis evicted the key of holder's hold of lock name (seen
// gone at at): the hold is recorded as ended EndEvicted, whether or not
// it was written already.
func (h *History) Evicted(ctx context.Context, name, holder string, at time.Time) error {
	return h.send(ctx, msg{amend: &amendReq{name: name, holder: holder, how: EndEvicted, at: at.UnixMilli()}})
}

// WorkedOn says holder still worked on its hold of lock name at at, after
// the hold ended (its release or renewal came late): the hold is recorded
// as lived until then (Hold.WorkedTo), over whoever held the lock next.
func (h *History) WorkedOn(ctx context.Context, name, holder string, at time.Time) error {
	return h.send(ctx, msg{amend: &amendReq{name: name, holder: holder, at: at.UnixMilli(), worked: true}})
}

func (h *History) send(ctx context.Context, m msg) error {
	select {
	case h.msgs <- m:
		return nil
	case <-h.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Flush writes now what the history holds (when this replica is the
// writer; otherwise it tries to become it), after every sample observed
// before the call. The writer also flushes by itself at every 10 s step.
func (h *History) Flush(ctx context.Context) error {
	return h.ask(ctx, msg{flush: make(chan error, 1)})
}

// Close stops the goroutine and, if this replica writes, releases the
// writer lock so another takes over at its next attempt.
func (h *History) Close(ctx context.Context) error {
	err := ErrClosed
	h.closeMu.Do(func() {
		err = h.ask(ctx, msg{close: make(chan error, 1)})
		h.stop()
	})
	return err
}

func (h *History) ask(ctx context.Context, m msg) error {
	reply := m.flush
	if reply == nil {
		reply = m.close
	}
	select {
	case h.msgs <- m:
	case <-h.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-reply:
		return err
	case <-h.done:
		// The goroutine replies before it ends: a Close's answer is
		// there even when done was picked first.
		select {
		case err := <-reply:
			return err
		default:
			return ErrClosed
		}
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stats returns the history's figures for /status; it reads no Redis.
func (h *History) Stats() Stats {
	h.statsMu.Lock()
	defer h.statsMu.Unlock()
	s := h.stats
	s.Dropped = h.dropped.Load()
	return s
}

func (h *History) setStats(f func(*Stats)) {
	h.statsMu.Lock()
	defer h.statsMu.Unlock()
	f(&h.stats)
}

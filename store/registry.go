package store

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// The client registry tells the console who a holder field's UUID is: each
// Client keeps a short-lived record under its ID (application, host, pid,
// version, start time, Redis-time heartbeat) and announces the names of the
// objects it uses, so the console learns them without SCAN. All of it runs
// in one background goroutine; the lock path only touches an in-memory map.

// DefaultBeat is the heartbeat period when Options.Beat is zero.
const DefaultBeat = 5 * time.Second

const (
	// nameFlushDelay is how long a first use waits for others to share its
	// announcement: short, since it adds to the time until the console
	// lists the object (within a second of its first use).
	nameFlushDelay = 50 * time.Millisecond
	// maxNamesPerCall bounds the names one script call announces.
	maxNamesPerCall = 1000
	// maxTrackedNames bounds the names a client remembers having
	// announced; past it the memory starts over (names are re-announced,
	// which costs a ZADD member and nothing else).
	maxTrackedNames = 100000
	// closeTimeout bounds Close's removal of the record.
	closeTimeout = time.Second
)

// A beat applied twice is harmless (the same record and scores), but it
// goes out once like every script of this package.
var clientBeatScript = newScript("client_beat")

// nameUse records that a name was used since the last beat, and the
// member that announces it.
type nameUse struct {
	used   atomic.Bool
	member string
}

type registry struct {
	rdb    redis.UniversalClient
	id     string
	record string // JSON without '}' and heartbeat_ms
	period time.Duration

	names   sync.Map // name -> *nameUse
	tracked atomic.Int64

	// sending is held while names or a beat are written, so a flush
	// returns only once what was pending before it is in Redis (the loop's
	// own flush and a caller's never overlap).
	sending sync.Mutex

	mu      sync.Mutex
	pending []string // first uses not yet announced
	cursor  string   // the stale-record sweep's HSCAN cursor

	kick      chan struct{}
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	lastErr   atomic.Pointer[error]
}

// lifetime is the context of the registry goroutine: cancelled by Close.
// The goroutine outlives any caller's context, so it has none to inherit.
type lifetime chan struct{}

func (l lifetime) Deadline() (time.Time, bool) { return time.Time{}, false }
func (l lifetime) Done() <-chan struct{}       { return l }
func (l lifetime) Value(any) any               { return nil }
func (l lifetime) Err() error {
	select {
	case <-l:
		return context.Canceled
	default:
		return nil
	}
}

func (o *Options) registryOn() bool { return o == nil || !o.NoRegistry }

func (o *Options) getApp() string {
	if o != nil && o.App != "" {
		return o.App
	}
	return filepath.Base(os.Args[0])
}

func (o *Options) getVersion() string {
	if o == nil {
		return ""
	}
	return o.Version
}

func (o *Options) getBeat() time.Duration {
	if o == nil || o.Beat <= 0 {
		return DefaultBeat
	}
	return o.Beat
}

func newRegistry(rdb redis.UniversalClient, id string, opts *Options) *registry {
	host, _ := os.Hostname()
	period := opts.getBeat()
	b, _ := json.Marshal(struct {
		App       string `json:"app"`
		Host      string `json:"host"`
		PID       int    `json:"pid"`
		Version   string `json:"version"`
		StartedMS int64  `json:"started_ms"`
		BeatMS    int64  `json:"beat_ms"`
		// ReplicaAcks is Options.ReplicaAcks (negative: off, 0: as many
		// as the master has), so the console can tell per lock whether
		// its holder's grants were confirmed by replicas.
		ReplicaAcks  int   `json:"replica_acks"`
		ReplicaAckMS int64 `json:"replica_ack_timeout_ms"`
	}{opts.getApp(), host, os.Getpid(), opts.getVersion(), time.Now().UnixMilli(), period.Milliseconds(),
		opts.replicaAcks(), opts.ackTimeout().Milliseconds()})
	r := &registry{rdb: rdb, id: id, record: strings.TrimSuffix(string(b), "}"), period: period, cursor: "0",
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go r.loop()
	return r
}

// announce notes a handle on name; the first one is announced within
// nameFlushDelay, later ones with the next beat.
func (r *registry) announce(name string) { r.announceAs(name, "") }

// announceAs is announce of a string kind (wire.AnnounceTokenLock or
// wire.AnnounceCounter; "" for a hash kind).
func (r *registry) announceAs(name, kind string) {
	if r == nil {
		return
	}
	if u, ok := r.names.Load(name); ok {
		u.(*nameUse).used.Store(true)
		return
	}
	if r.tracked.Add(1) > maxTrackedNames {
		r.names.Clear()
		r.tracked.Store(1)
	}
	member := wire.AnnouncedMember(kind, name)
	if _, loaded := r.names.LoadOrStore(name, &nameUse{member: member}); loaded {
		return
	}
	r.mu.Lock()
	r.pending = append(r.pending, member)
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// touch marks a known name as used; unknown names are left to announce.
func (r *registry) touch(name string) {
	if r == nil {
		return
	}
	if u, ok := r.names.Load(name); ok {
		u.(*nameUse).used.Store(true)
	}
}

func (r *registry) loop() {
	defer close(r.done)
	ctx := lifetime(r.stop)
	r.beat(ctx)
	t := time.NewTicker(r.period)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			r.beat(ctx)
		case <-r.kick:
			select {
			case <-r.stop:
				return
			case <-time.After(nameFlushDelay):
			}
			r.flushNames(ctx)
		}
	}
}

// takePending removes up to maxNamesPerCall first uses.
func (r *registry) takePending() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := min(len(r.pending), maxNamesPerCall)
	out := r.pending[:n:n]
	r.pending = r.pending[n:]
	if len(r.pending) > 0 {
		select {
		case r.kick <- struct{}{}:
		default:
		}
	}
	return out
}

func (r *registry) flushNames(ctx context.Context) {
	r.sending.Lock()
	defer r.sending.Unlock()
	if names := r.takePending(); len(names) > 0 {
		r.run(ctx, "", names)
	}
}

// beat writes the record and re-announces names used since the last beat
// (first uses waiting for their flush go along).
func (r *registry) beat(ctx context.Context) {
	r.sending.Lock()
	defer r.sending.Unlock()
	names := r.takePending()
	r.names.Range(func(k, v any) bool {
		if len(names) >= maxNamesPerCall {
			return false
		}
		if u := v.(*nameUse); u.used.Swap(false) {
			names = append(names, u.member)
		}
		return true
	})
	r.run(ctx, r.record, names)
}

func (r *registry) run(ctx context.Context, record string, names []string) {
	r.mu.Lock()
	cursor := r.cursor
	r.mu.Unlock()
	argv := make([]any, 0, 3+len(names))
	argv = append(argv, r.id, record, cursor)
	for _, n := range names {
		argv = append(argv, n)
	}
	reply, err := clientBeatScript.Run(ctx, r.rdb, []string{wire.ClientsKey, wire.ClientNamesKey}, argv...).Slice()
	if err != nil {
		r.lastErr.Store(&err)
		return
	}
	r.lastErr.Store(nil)
	if len(reply) == 2 {
		if next, ok := reply[1].(string); ok {
			r.mu.Lock()
			r.cursor = next
			r.mu.Unlock()
		}
	}
}

// close stops the goroutine and removes the record.
func (r *registry) close() error {
	if r == nil {
		return nil
	}
	var err error
	r.closeOnce.Do(func() {
		close(r.stop)
		<-r.done
		ctx, cancel := context.WithTimeout(context.WithoutCancel(lifetime(r.stop)), closeTimeout)
		defer cancel()
		err = r.rdb.HDel(ctx, wire.ClientsKey, r.id).Err()
	})
	return err
}

// Close stops the client's heartbeat and removes its registry record, so
// the console stops showing it at once rather than after three missed
// beats. It waits up to a second for Redis. It also closes the lock-wait
// subscription if no Lock call is waiting, rather than after its idle
// delay: the caller may close the Redis client next. Locks still held stay
// held. The Redis client stays open (the caller owns it).
func (c *Client) Close() error {
	c.closeIdleWaits()
	return c.reg.close()
}

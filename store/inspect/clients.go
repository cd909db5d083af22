package inspect

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect/conv"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Who holds a lock: a holder field starts with the UUID of the store.Client
// (or Redisson instance) that took it, and lockwarden's store clients
// register that UUID with their application, host and pid (the registry in
// store/registry.go). The console reads the registry once per sampler tick
// at most and joins it with the holders it sees; Redisson clients do not
// register, so their holders stay "unregistered".

// RegistryNamesKey is the zset of the object names store clients
// announce, scored by Redis TIME ms (the walk reads it incrementally).
const RegistryNamesKey = wire.ClientNamesKey

// ClientInfo is one registered client as the registry shows it.
type ClientInfo struct {
	ID      string `json:"id"`
	App     string `json:"app"`
	Host    string `json:"host"`
	PID     int    `json:"pid"`
	Version string `json:"version"`
	// Started and Heartbeat are the client's start (its own clock) and
	// its last beat (Redis time); BeatMS its beat period.
	Started   time.Time `json:"-"`
	Heartbeat time.Time `json:"-"`
	BeatMS    int64     `json:"-"`
	// HeartbeatAgeMS is Redis time at the read minus the last beat.
	HeartbeatAgeMS int64 `json:"heartbeat_age_ms"`
	// ReplicaAcks is the client's store.Options.ReplicaAcks: -1 when its
	// lock grants are not confirmed by replicas, 0 when every replica of
	// the master confirms them, n for n replicas; nil when the client does
	// not say (an older store).
	ReplicaAcks *int `json:"replica_acks,omitempty"`
}

// Acked says whether the client's lock grants wait for replicas; nil
// when it does not say.
func (ci ClientInfo) Acked() *bool {
	if ci.ReplicaAcks == nil {
		return nil
	}
	on := *ci.ReplicaAcks >= 0
	return &on
}

// Gone reports whether the client missed wire.ClientGoneBeats beats.
func (ci ClientInfo) Gone() bool {
	period := ci.BeatMS
	if period <= 0 {
		period = store.DefaultBeat.Milliseconds()
	}
	return ci.HeartbeatAgeMS > wire.ClientGoneBeats*period
}

// Registry is the client registry at one read.
type Registry struct {
	Clients map[string]ClientInfo
	// At is Redis time at the read.
	At time.Time
}

// Lookup returns the registered client of a holder field or waiter id
// ("<uuid>:<owner>"); false for unregistered and foreign ids.
func (r *Registry) Lookup(holder string) (ClientInfo, bool) {
	if r == nil {
		return ClientInfo{}, false
	}
	ci, ok := r.Clients[ClientIDOf(holder)]
	return ci, ok
}

// ClientIDOf is the client UUID that starts a holder field or waiter id;
// "" when the id is not in that shape (a token lock's token).
func ClientIDOf(holder string) string {
	if !wire.IsHolderField(holder) {
		return ""
	}
	return holder[:36]
}

// maxRegistryFields bounds the registry read: the beat script keeps the
// hash to clients seen in the last hour, so more means something is wrong
// and the console reads nobody rather than a huge hash every second.
const maxRegistryFields = 10000

// parseRegistry turns the records of the registry hash (a tick reads it
// when SampleOptions.Clients asks) into a Registry; records that do not
// parse are skipped.
func parseRegistry(fields map[string]string, now time.Time) *Registry {
	r := &Registry{Clients: make(map[string]ClientInfo, len(fields)), At: now}
	for id, v := range fields {
		var rec wire.ClientRecord
		if json.Unmarshal([]byte(v), &rec) != nil || rec.HeartbeatMS <= 0 {
			continue
		}
		r.Clients[id] = ClientInfo{ID: id, App: rec.App, Host: rec.Host, PID: rec.PID, Version: rec.Version,
			Started: time.UnixMilli(rec.StartedMS), Heartbeat: time.UnixMilli(rec.HeartbeatMS), BeatMS: rec.BeatMS,
			HeartbeatAgeMS: max(0, now.UnixMilli()-rec.HeartbeatMS), ReplicaAcks: rec.ReplicaAcks}
	}
	return r
}

// Hold is one thing a client holds or waits for.
type Hold struct {
	Lock   string `json:"lock"`
	Kind   Kind   `json:"kind"`
	Holder string `json:"holder"` // the holder field or waiter id
	// What is "holds", "read", "write", "waits" (a fair-queue place) or
	// "queued" (a place in store's hand-off queue; Holder is the holder
	// field it waits to take).
	What  string `json:"what"`
	Count int64  `json:"count,omitempty"` // reentry count or read levels
	// Place is a waiter's 1-based position in its queue.
	Place int `json:"place,omitempty"`
}

// ClientHolds groups what locks' holders and fair-lock waiters belong to
// each client id, in lock name order. Ids that are not "<uuid>:<owner>"
// (token-lock tokens) belong to nobody.
func ClientHolds(locks []LockInfo) map[string][]Hold {
	out := map[string][]Hold{}
	for _, l := range locks {
		for _, h := range l.Holders {
			id := ClientIDOf(h.ID)
			if id == "" {
				continue
			}
			what := "holds"
			if h.Mode != "" {
				what = h.Mode
			}
			out[id] = append(out[id], Hold{Lock: l.Name, Kind: l.Kind, Holder: h.ID, What: what, Count: h.Count})
		}
		for i, w := range l.Waiters {
			if w.ArrivedMS > 0 { // store's queue: the token is no client's, the owner is
				if id := ClientIDOf(w.Owner); id != "" {
					out[id] = append(out[id], Hold{Lock: l.Name, Kind: l.Kind, Holder: w.Owner, What: "queued", Place: i + 1})
				}
			} else if id := ClientIDOf(w.ID); id != "" {
				out[id] = append(out[id], Hold{Lock: l.Name, Kind: l.Kind, Holder: w.ID, What: "waits", Place: i + 1})
			}
		}
	}
	for _, hs := range out {
		sort.SliceStable(hs, func(i, j int) bool { return hs[i].Lock < hs[j].Lock })
	}
	return out
}

// ReleaseResult is the outcome of breaking one hold, or of removing a
// client's places from one fair lock's queue, for ReleaseAll.
type ReleaseResult struct {
	Lock string `json:"lock"`
	// Holder is the holder field released, or for What "waits" the waiter
	// ids removed (those seen when none was still queued), ", "-separated.
	Holder string `json:"holder"`
	// What is the Hold's: "holds", "read", "write", or "waits" for the
	// client's places in a fair lock's queue.
	What string `json:"what"`
	// Err is nil when released; ErrHolderChanged or ErrNotFound when
	// the holder let go first (nothing changed).
	Err error `json:"-"`
}

// ReleaseAll frees everything of client id among holds (as the console
// last saw them). First its fair-queue places, one script per lock
// (dropWaiters), so the force-unlocks after them wake a live waiter; then
// every hold, each checked against the holder seen with ForceUnlock, so a
// lock the client released meanwhile and someone else took is left alone.
// Its places in store's queues ("queued") are left to their Lock calls:
// a live one still wants the lock, a dead one's entry expires within
// seconds.
// Each lock is reported once per kind of change, done or not; the error
// is only for an invalid id or the end of ctx.
func (c *Inspector) ReleaseAll(ctx context.Context, id string, holds []Hold) ([]ReleaseResult, error) {
	if !wire.IsHolderField(id + ":x") {
		return nil, invalid("id", "must be a client UUID (36 characters, 8-4-4-4-12 hex digits)")
	}
	var out []ReleaseResult
	var queued []string // fair locks, in holds' order
	places := map[string][]string{}
	for _, h := range holds {
		if h.What != "waits" || ClientIDOf(h.Holder) != id {
			continue
		}
		if places[h.Lock] == nil {
			queued = append(queued, h.Lock)
		}
		places[h.Lock] = append(places[h.Lock], h.Holder)
	}
	for _, lock := range queued {
		removed, err := c.dropWaiters(ctx, lock, id, places[lock])
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		r := ReleaseResult{Lock: lock, What: "waits", Holder: strings.Join(removed, ", "), Err: err}
		if err == nil && len(removed) == 0 {
			r.Holder = strings.Join(places[lock], ", ")
			r.Err = fmt.Errorf("store: drop waiters of %q: %w: none of its places is still queued", lock, ErrHolderChanged)
		}
		out = append(out, r)
	}
	for _, h := range holds {
		if h.What == "waits" || h.What == "queued" || ClientIDOf(h.Holder) != id {
			continue
		}
		err := c.ForceUnlock(ctx, h.Lock, h.Holder)
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		out = append(out, ReleaseResult{Lock: h.Lock, Holder: h.Holder, What: h.What, Err: err})
	}
	return out, nil
}

// maxDropWaiters bounds the waiter ids one dropWaiters call names.
const maxDropWaiters = 1000

// dropWaiters removes the places of client id (a client UUID) listed in
// waiters from the queue of the fair lock at name, moving the deadlines of
// the waiters behind them earlier as Redisson's own removal does, and
// wakes the new head when the lock is free (fairlock_drop_client.lua). A
// place no longer queued, or not the client's, is left alone. It returns
// the ids removed, in queue order; none when nothing changed. The script is
// sent once: a lost reply is store.ErrUncertain.
func (c *Inspector) dropWaiters(ctx context.Context, name, id string, waiters []string) ([]string, error) {
	if err := validateName(name); err != nil {
		return nil, err
	}
	if !wire.IsHolderField(id + ":x") {
		return nil, invalid("id", "must be a client UUID (36 characters, 8-4-4-4-12 hex digits)")
	}
	if len(waiters) == 0 || len(waiters) > maxDropWaiters {
		return nil, invalid("waiters", "must name 1 to %d waiter ids, got %d", maxDropWaiters, len(waiters))
	}
	sharded, err := c.pubsubFlag(ctx)
	if err != nil {
		return nil, err
	}
	args := make([]any, 0, 5+len(waiters))
	args = append(args, id+":", store.DefaultFairThreadWait.Milliseconds(), wire.UnlockChannel(name), wire.UnlockMessage, sharded)
	for _, w := range waiters {
		args = append(args, w)
	}
	removed, err := fairDropClientScript.Run(ctx, c.rdb,
		[]string{name, wire.FairLockQueueKey(name), wire.FairLockTimeoutKey(name)}, args...).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("store: drop waiters of %q: %w", name, wrongKindErr(err))
	}
	return removed, nil
}

// DescribeHolder says who a holder is in words: "orders-api on host-7
// (pid 4211), owner 77", or "unregistered client <uuid> (Redisson or
// other)", or the id itself when it is not a client's (a token).
func DescribeHolder(reg *Registry, holder string) string {
	id := ClientIDOf(holder)
	if id == "" {
		return holder
	}
	owner := strings.TrimSuffix(holder[37:], wire.RWWriteSuffix)
	ci, ok := reg.Lookup(holder)
	if !ok {
		return fmt.Sprintf("unregistered client %s (Redisson or other), owner %s", id, owner)
	}
	s := fmt.Sprintf("%s on %s (pid %d), owner %s", ci.App, ci.Host, ci.PID, owner)
	if ci.Gone() {
		s += ", client gone"
	}
	return s
}

// AnnotateHolder fills h's identity and hold time from the registry and
// seen (when the console first saw this holder; zero if never), as of now.
func AnnotateHolder(reg *Registry, h *Holder, seen, now time.Time) {
	h.Who = DescribeHolder(reg, h.ID)
	if len(h.Facts) > 0 {
		// Another library's holder says who it is (a BullMQ token looks
		// like a client's holder field, yet no store client wrote it).
		if _, registered := reg.Lookup(h.ID); !registered {
			h.Who = conv.Describe(h.Facts)
		}
	}
	h.Client = holderClient(reg, h.ID)
	switch {
	case h.AcquiredMS > 0:
		h.HeldMS, h.HeldSinceSeen = max(0, now.UnixMilli()-h.AcquiredMS), false
	case !seen.IsZero():
		h.HeldMS, h.HeldSinceSeen = max(0, now.Sub(seen).Milliseconds()), true
	}
	if h.RenewedMS > 0 {
		h.RenewedAgoMS = max(0, now.UnixMilli()-h.RenewedMS)
	}
}

// holderClient is the registry's word on the client of a holder field or
// waiter owner; nil when the client is not registered.
func holderClient(reg *Registry, holder string) *HolderClient {
	ci, ok := reg.Lookup(holder)
	if !ok {
		return nil
	}
	return &HolderClient{App: ci.App, Host: ci.Host, PID: ci.PID, Version: ci.Version,
		HeartbeatAgeMS: ci.HeartbeatAgeMS, Gone: ci.Gone(), Acked: ci.Acked()}
}

// queueHoldTimes queues the read of the hold times lockwarden's scripts
// keep beside a read-write, token or deadline lock (wire.HeldKey); a lock
// in Redisson's RLock hash keeps them in the hash (parseLock).
func queueHoldTimes(ctx context.Context, pipe redis.Pipeliner, name string) *redis.MapStringStringCmd {
	return pipe.HGetAll(ctx, wire.HeldKey(name))
}

// applyHoldTimes copies the recorded times of info's current holders;
// fields of holders gone (force-unlocked) are ignored.
func applyHoldTimes(info *LockInfo, cmd *redis.MapStringStringCmd) {
	if cmd == nil || cmd.Err() != nil {
		return
	}
	times := cmd.Val()
	for i := range info.Holders {
		if a, r, ok := wire.ParseHoldRecord(times[info.Holders[i].ID]); ok {
			info.Holders[i].AcquiredMS, info.Holders[i].RenewedMS = a, r
		}
	}
}

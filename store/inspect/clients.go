package inspect

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect/clients"
	"github.com/lockwarden/lockwarden/store/inspect/conv"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// RegistryNamesKey is the zset of the object names store clients
// announce, scored by Redis TIME ms (the walk reads it incrementally).
const RegistryNamesKey = wire.ClientNamesKey

// The registry's records are package clients'; these names keep them
// reachable beside the model.
type (
	ClientInfo = clients.Info
	Registry   = clients.Registry
)

// ClientIDOf is clients.IDOf.
func ClientIDOf(holder string) string { return clients.IDOf(holder) }

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

// DescribeHolder is clients.Describe.
func DescribeHolder(reg *Registry, holder string) string { return clients.Describe(reg, holder) }

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

func holderClient(reg *Registry, holder string) *HolderClient { return clients.Of(reg, holder) }

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

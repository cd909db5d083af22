package inspect

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect/conv"
	"github.com/lockwarden/lockwarden/store/inspect/internal/nodes"

	"github.com/lockwarden/lockwarden/luascripts"
	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/internal/wire"
)

// The force-unlock scripts change state, so they are sent once
// (store.Script.Run): a lost reply is reported as store.ErrUncertain, not
// re-sent by go-redis.
var (
	lockForceReleaseScript = store.NewScript(luascripts.Source("lock_force_release"))
	fairForceReleaseScript = store.NewScript(luascripts.Source("fairlock_force_release"))
	rwForceReleaseScript   = store.NewScript(luascripts.Source("rwlock_force_release"))
	tokenLockReleaseScript = store.NewScript(luascripts.Source("tokenlock_release"))
	deadlineReleaseScript  = store.NewScript(luascripts.Source("deadlinelock_force_release"))
	fairDropClientScript   = store.NewScript(luascripts.Source("fairlock_drop_client"))
)

// The console's side of locks: read one as it is, and break one that is
// stuck. Breaking is conditional on the holder the admin saw, because
// between the page load and the click the lock may have been released and
// taken by someone healthy.

// GetLock reads the lock at name: its hash (hash_read.lua, which reads a
// hash only while it is small enough to be a lock) or, for a name matching
// a token-lock pattern, its string (a bounded read), atomically, then its
// side keys (fair queue, fencing token, read-level leases). ErrNotFound
// when there is no key; store.ErrWrongKind when the key exists but is not a
// lock of a known kind (any other type, a hash that is not in a lock layout,
// or one too large to be a lock, which is left unread).
func (c *Inspector) GetLock(ctx context.Context, name string) (*LockInfo, error) {
	if err := validateName(name); err != nil {
		return nil, err
	}
	r, err := c.readByType(ctx, name)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, fmt.Errorf("store: lock %q: %w", name, ErrNotFound)
	case err != nil:
		return nil, fmt.Errorf("store: get lock %q: %w", name, err)
	case r.lock == nil:
		return nil, r.wrongKind("lock", name)
	}
	// Its hold times and side keys are a side read, for strings as for hashes.
	locks := []LockInfo{*r.lock}
	if err := c.ReadSides(ctx, c.rdb, locks, nil, r.nowMS); err != nil {
		return nil, fmt.Errorf("store: get lock %q: %w", name, err)
	}
	return &locks[0], nil
}

// readString reads the string at name (a token or deadline lock, a
// counter) with its type and Redis time, in one MULTI: STRLEN and a bounded
// GETRANGE, so a large value is never transferred whole.
func (c *Inspector) readString(ctx context.Context, name string) (typ string, nowMS int64, str stringRead, err error) {
	pipe := c.rdb.TxPipeline()
	t := pipe.Type(ctx, name)
	now := pipe.Time(ctx)
	str = queueStringRead(ctx, pipe, name)
	if err := nodes.Exec(ctx, pipe); err != nil {
		return "", 0, str, err
	}
	if err := t.Err(); err != nil {
		return "", 0, str, err
	}
	if err := now.Err(); err != nil {
		return "", 0, str, err
	}
	return t.Val(), now.Val().UnixMilli(), str, nil
}

// ForceUnlock breaks the lock at name, only if holder (as GetLock listed
// it: a hash field "<client-id>:<owner>", or a token lock's token) still
// holds it, with the semantics of the lock's kind:
//
//   - reentrant, fenced: the hash is deleted whatever the reentry count and
//     "0" is published on wire.UnlockChannel(name); a fenced lock's token key is
//     never touched, so the next holder's token is still larger.
//   - fair: waiters whose place timed out are dropped, the hash is deleted
//     and "0" is published on the channel of the thread now at the head of
//     the queue (wire.UnlockChannel(name)+":"+its id), nowhere else.
//   - read-write: only that holder is removed, with its read-level keys;
//     when nobody is left the hash is deleted and wire.RWLockChannel(name) gets
//     "1" after a writer, "0" after the last reader. A writer leaving read
//     levels of its own thread turns the lock into a read lock.
//   - token: compare-and-delete; "0" is published on
//     wire.TokenLockChannel(name), where lockwarden's waiters listen.
//
// ErrNotFound: no such key. ErrHolderChanged: someone else holds it now.
// store.ErrWrongKind: the key is not a lock. In all three nothing changed.
func (c *Inspector) ForceUnlock(ctx context.Context, name, holder string) error {
	if err := validateName(name); err != nil {
		return err
	}
	switch {
	case holder == "":
		return invalid("holder", "must not be empty")
	case len(holder) > store.MaxNameLen:
		return invalid("holder", "must be at most %d bytes, got %d", store.MaxNameLen, len(holder))
	}
	// A read-write holder's count decides which level keys go with it; if
	// it changes between the read and the script, read again.
	for attempt := 0; attempt < 5; attempt++ {
		info, err := c.GetLock(ctx, name)
		if err != nil {
			return err
		}
		code, err := c.forceRelease(ctx, info, holder)
		if err != nil {
			return fmt.Errorf("store: force unlock %q: %w", name, err)
		}
		if code != rwCountChanged {
			return forceReleaseErr(name, holder, code)
		}
	}
	return fmt.Errorf("store: force unlock %q: %w: %s keeps changing its reentry count", name, ErrHolderChanged, holder)
}

// rwCountChanged is rwlock_force_release.lua's "read again" code.
const rwCountChanged = -3

// forceRelease runs the script of info's kind and returns its code (1 and
// 2 both mean released).
func (c *Inspector) forceRelease(ctx context.Context, info *LockInfo, holder string) (int64, error) {
	name := info.Name
	if cv := conv.Of(string(info.Kind), ""); cv != nil {
		n, err := cv.Release(ctx, c.rdb, c.ObjectPatterns().convConfig(), convTarget(info, holder))
		return n, wrongKindErr(err)
	}
	sharded, err := c.pubsubFlag(ctx)
	if err != nil {
		return 0, err
	}
	switch info.Kind {
	case KindFairLock:
		return fairForceReleaseScript.Run(ctx, c.rdb,
			[]string{name, wire.FairLockQueueKey(name), wire.FairLockTimeoutKey(name)},
			wire.UnlockChannel(name), wire.UnlockMessage, holder, sharded).Int64()
	case KindRWLock:
		keys := []string{name, wire.HeldKey(name)}
		var count int64
		for _, h := range info.Holders {
			if h.ID == holder {
				count = h.Count
			}
		}
		if count == 0 {
			return -1, nil
		}
		if !strings.HasSuffix(holder, wire.RWWriteSuffix) {
			for level := int64(1); level <= min(count, wire.MaxRWLevelKeys); level++ {
				keys = append(keys, wire.RWReadLevelKey(name, holder, level))
			}
		}
		return rwForceReleaseScript.Run(ctx, c.rdb, keys, wire.RWLockChannel(name), holder, count, sharded).Int64()
	case KindTokenLock:
		return tokenLockReleaseScript.Run(ctx, c.rdb, []string{name, wire.HeldKey(name)}, holder, wire.TokenLockChannel(name)).Int64()
	case KindDeadlineLock:
		return deadlineReleaseScript.Run(ctx, c.rdb, []string{name, wire.HeldKey(name)}, holder).Int64()
	}
	// Reentrant and fenced: Redisson's RLock force-unlock (the fenced lock's
	// token key is not passed, so it cannot be touched).
	return lockForceReleaseScript.Run(ctx, c.rdb, []string{name},
		wire.UnlockChannel(name), wire.UnlockMessage, holder, sharded).Int64()
}

// maxPlanLevels bounds the read-level keys a plan lists by name; the rest
// are counted in DeletesMore.
const maxPlanLevels = 3

// ForceUnlockPlan says what ForceUnlock(name, holder) will do to Redis, for
// a console to show before the admin confirms.
type ForceUnlockPlan struct {
	// Deletes are the keys deleted (when the lock ends up free).
	Deletes []string `json:"deletes"`
	// DeletesMore counts further keys deleted that Deletes does not list: a
	// read holder's level keys beyond the first maxPlanLevels.
	DeletesMore int64 `json:"deletes_more,omitempty"`
	// RemovesField is the hash field removed while other holders stay
	// (read-write locks with several holders).
	RemovesField string `json:"removes_field,omitempty"`
	// Channel and Message are what is published ("" when nothing is).
	Channel string `json:"channel,omitempty"`
	Message string `json:"message,omitempty"`
	// Keeps are related keys deliberately left alone.
	Keeps []string `json:"keeps,omitempty"`
	// Summary says it in one sentence.
	Summary string `json:"summary"`
}

// ForceUnlockPlan describes ForceUnlock for the holder on the lock as read.
// Redis may change before the click; ForceUnlock then refuses rather than
// doing something else (ErrHolderChanged).
func (l *LockInfo) ForceUnlockPlan(holder string) ForceUnlockPlan {
	if cv := conv.Of(string(l.Kind), ""); cv != nil {
		p := cv.Plan(convTarget(l, holder))
		return ForceUnlockPlan{Deletes: p.Deletes, RemovesField: p.RemovesField, Channel: p.Channel, Message: p.Message, Summary: p.Summary}
	}
	switch l.Kind {
	case KindDeadlineLock:
		return ForceUnlockPlan{Deletes: []string{l.Name},
			Summary: fmt.Sprintf("deletes %q if its value is still %s (the deadline %s); a client that took it over meanwhile wrote another and keeps it; nothing is published", l.Name, holder, l.Deadline.UTC().Format(time.RFC3339))}
	case KindTokenLock:
		return ForceUnlockPlan{Deletes: []string{l.Name},
			Channel: wire.TokenLockChannel(l.Name), Message: wire.UnlockMessage,
			Summary: fmt.Sprintf("deletes %q if it still holds this token and publishes %q on %s, which wakes lockwarden's waiters; other clients find it free on their next retry", l.Name, wire.UnlockMessage, wire.TokenLockChannel(l.Name))}
	case KindFairLock:
		p := ForceUnlockPlan{Deletes: []string{l.Name}, Message: wire.UnlockMessage,
			Keeps: []string{wire.FairLockQueueKey(l.Name), wire.FairLockTimeoutKey(l.Name)}}
		for _, w := range l.Waiters {
			if w.RemainingMS > 0 {
				p.Channel = w.Channel
				p.Summary = fmt.Sprintf("deletes %q and wakes the next waiter %s on %s; waiters whose place timed out are dropped from the queue", l.Name, w.ID, w.Channel)
				return p
			}
		}
		p.Summary = fmt.Sprintf("deletes %q; no waiter is left in time to wake", l.Name)
		return p
	case KindRWLock:
		var target *Holder
		for i := range l.Holders {
			if l.Holders[i].ID == holder {
				target = &l.Holders[i]
			}
		}
		if target == nil {
			return ForceUnlockPlan{Summary: "nothing: that holder does not hold the lock"}
		}
		var levels []string
		var more int64
		if target.Mode == wire.RWModeRead {
			for lv := int64(1); lv <= min(target.Count, maxPlanLevels); lv++ {
				levels = append(levels, wire.RWReadLevelKey(l.Name, holder, lv))
			}
			more = min(target.Count, wire.MaxRWLevelKeys) - int64(len(levels))
		}
		andMore := ""
		if more > 0 {
			andMore = fmt.Sprintf(" (deleting its read-level keys: the %d listed and %d more)", len(levels), more)
		}
		if len(l.Holders) > 1 {
			s := fmt.Sprintf("removes %s (%s, %d levels) from %q%s; the other %d holder(s) keep the lock, nothing is published", holder, target.Mode, target.Count, l.Name, andMore, len(l.Holders)-1)
			if target.Mode == wire.RWModeWrite {
				s += "; the lock becomes a read lock"
			}
			return ForceUnlockPlan{RemovesField: holder, Deletes: levels, DeletesMore: more, Summary: s}
		}
		msg := "0"
		if target.Mode == wire.RWModeWrite {
			msg = "1"
		}
		return ForceUnlockPlan{Deletes: append([]string{l.Name}, levels...), DeletesMore: more, Channel: wire.RWLockChannel(l.Name), Message: msg,
			Summary: fmt.Sprintf("deletes %q%s and publishes %q on %s so waiting readers and writers retry", l.Name, andMore, msg, wire.RWLockChannel(l.Name))}
	}
	p := ForceUnlockPlan{Deletes: []string{l.Name}, Channel: wire.UnlockChannel(l.Name), Message: wire.UnlockMessage,
		Summary: fmt.Sprintf("deletes %q (all reentry levels) and publishes %q on %s", l.Name, wire.UnlockMessage, wire.UnlockChannel(l.Name))}
	if l.Kind == KindFencedLock {
		p.Keeps = []string{wire.FencingTokenKey(l.Name)}
		p.Summary += fmt.Sprintf("; the fencing token %d in %s is kept so the next holder's token is larger", l.FencingToken, wire.FencingTokenKey(l.Name))
	}
	return p
}

// forceReleaseErr maps lock_force_release.lua's return codes.
func forceReleaseErr(name, holder string, code int64) error {
	switch code {
	case 1, 2:
		return nil
	case 0:
		return fmt.Errorf("store: force unlock %q: %w", name, ErrNotFound)
	case -1:
		return fmt.Errorf("store: force unlock %q: %w: %s no longer holds it", name, ErrHolderChanged, holder)
	case -2:
		return fmt.Errorf("store: force unlock %q: %w", name, store.ErrWrongKind)
	}
	return fmt.Errorf("store: force unlock %q: unexpected script reply %d", name, code)
}

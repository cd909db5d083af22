package conv

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lockwarden/lockwarden/luascripts"
	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// ShedLock is ShedLock's Redis lock provider (shedlock-provider-redis-*,
// InternalRedisLockProvider): string "job-lock:<env>:<name>" set with SET NX
// PX lockAtMostFor to "ADDED:<ISO-8601 ms>@<hostname>:<uuid>" (the ":<uuid>"
// since 6.7.0). When the task ends before lockAtLeastFor, the key stays with
// the same value and its expiry moved to the end of lockAtLeastFor; so a
// lock whose expiry moved earlier under an unchanged value has finished.
const ShedLock = "shedlock"

// shedlockPrefix is ShedLock's default key prefix (DEFAULT_KEY_PREFIX).
const shedlockPrefix = "job-lock:"

// convCompareDelete is compare-and-delete by the value seen: what ShedLock,
// Laravel, BullMQ and DistributedLock.Redis release with.
var convCompareDelete = store.NewScript(luascripts.Source("tokenlock_release"))

var shedlockConvention = &Convention{
	kind: ShedLock, keyType: "string",
	claims: func(_ Config, name string) bool {
		rest, ok := strings.CutPrefix(name, shedlockPrefix)
		env, lock, ok2 := strings.Cut(rest, ":")
		return ok && ok2 && env != "" && lock != ""
	},
	parse: parseShedLock,
	release: func(ctx context.Context, rdb redis.UniversalClient, _ Config, t Target) (int64, error) {
		return code(convCompareDelete.Run(ctx, rdb, []string{t.Name}, t.Holder))
	},
	plan: func(t Target) Plan {
		return Plan{Deletes: []string{t.Name},
			Summary: fmt.Sprintf("deletes %q if its value is still %s, as ShedLock's own unlock does; ShedLock keeps no waiters: the next node whose schedule fires runs the task", t.Name, t.Holder)}
	},
}

// parseShedLock reads "ADDED:<time>@<host>[:<uuid>]".
func parseShedLock(p Config, k Key) (Found, bool) {
	rest, ok := strings.CutPrefix(k.Value, "ADDED:")
	if !ok || k.PTTL == -2 {
		return Found{}, false
	}
	at, host, ok := strings.Cut(rest, "@")
	added, err := time.Parse(time.RFC3339Nano, at)
	if !ok || err != nil || host == "" {
		return Found{}, false
	}
	layout := "6.7.0 or later (ADDED:<time>@<host>:<uuid>)"
	if i := len(host) - 37; i > 0 && host[i] == ':' && wire.IsUUID(host[i+1:]) {
		host = host[:i]
	} else {
		layout = "before 6.7.0 (ADDED:<time>@<host>, no uuid)"
	}
	facts := map[string]string{FactHost: host, FactSince: rfc3339(added.UnixMilli()), FactLayout: layout}
	why := "ShedLock: key " + shedlockPrefix + "<env>:<name> and a value ADDED:<time>@<host>"
	if k.PTTL > 0 {
		expires := k.NowMS + k.PTTL.Milliseconds()
		facts[FactExpires] = rfc3339(expires)
		facts[FactState] = p.Memo.shedlockState(k.Name, k.Value, expires)
	} else {
		facts[FactState] = "no expiry (ShedLock always sets lockAtMostFor: written by something else?)"
	}
	l := stringLock(k, ShedLock, why, facts)
	l.Holders[0].AcquiredMS = added.UnixMilli()
	return Found{Lock: l}, true
}

// shedlockState tells a running task from one that finished and is kept
// until lockAtLeastFor ends: ShedLock's unlock keeps the value and moves
// the expiry earlier, its extend moves it later. Remembered per name.
func (m *Memo) shedlockState(name, value string, expiresMS int64) string {
	if m == nil {
		return "running"
	}
	type seen struct {
		value     string
		expiresMS int64
		finished  bool
	}
	state := seen{value: value, expiresMS: expiresMS}
	if v, ok := m.expiry.Load(name); ok {
		last := v.(seen)
		if last.value == value {
			// A second's slack: PTTL and TIME are read apart.
			state.finished = last.finished || expiresMS < last.expiresMS-1000
		}
	}
	m.expiry.Store(name, state)
	if state.finished {
		return "finished, kept until lockAtLeastFor ends"
	}
	return "running (or finished and kept for lockAtLeastFor, not told apart until its expiry moves)"
}

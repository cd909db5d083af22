package inspect

import (
	"context"
	"fmt"
	"strings"

	"github.com/lockwarden/lockwarden/luascripts"
	"github.com/lockwarden/lockwarden/store"
)

// KindPyRedisLock is python-redis-lock (redis_lock.Lock): string
// "lock:<name>" set with SET NX [EX expire] to a 24-character id (18
// random bytes in base64), often without expiry. Waiters block in BLPOP on
// the list "lock-signal:<name>"; its release deletes the signal list,
// pushes one element, gives it signal_expire (1000 ms) and deletes the
// lock, all in one script, so exactly one waiter wakes.
const KindPyRedisLock Kind = "python-redis-lock"

const (
	pyRedisLockPrefix   = "lock:"
	pyRedisSignalPrefix = "lock-signal:"
	pyRedisSignalMS     = 1000
)

var pyRedisLockRelease = store.NewScript(luascripts.Source("pyredislock_force_release"))

// pyRedisSignalKey is the waiters' list of the lock at name.
func pyRedisSignalKey(name string) string {
	return pyRedisSignalPrefix + strings.TrimPrefix(name, pyRedisLockPrefix)
}

var pyRedisLockConvention = &convention{
	kind: KindPyRedisLock, keyType: "string",
	claims: func(_ ObjectPatterns, name string) bool {
		return len(name) > len(pyRedisLockPrefix) && strings.HasPrefix(name, pyRedisLockPrefix)
	},
	parse: func(_ ObjectPatterns, k convKey) (convFound, bool) {
		if !isBase64(k.value, 18) || k.pttl == -2 {
			return convFound{}, false
		}
		facts := map[string]string{}
		if k.pttl < 0 {
			facts[FactState] = "no expiry: held until released or force-unlocked"
		}
		return convFound{lock: stringLock(k, KindPyRedisLock,
			"python-redis-lock: key lock:<name> and a 24-character id (18 random bytes in base64)", facts)}, true
	},
	release: func(ctx context.Context, c *Inspector, l *LockInfo, holder string) (int64, error) {
		return scriptCode(pyRedisLockRelease.Run(ctx, c.rdb,
			[]string{l.Name, pyRedisSignalKey(l.Name)}, holder, pyRedisSignalMS))
	},
	plan: func(l *LockInfo, holder string) ForceUnlockPlan {
		sig := pyRedisSignalKey(l.Name)
		return ForceUnlockPlan{Deletes: []string{l.Name},
			Summary: fmt.Sprintf("deletes %q if its id is still %s and pushes one signal on %s (kept %d ms), as python-redis-lock's release does, so one waiter blocked in BLPOP takes the lock", l.Name, holder, sig, pyRedisSignalMS)}
	},
}

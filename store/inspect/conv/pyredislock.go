package conv

import (
	"context"
	"fmt"
	"strings"

	"github.com/lockwarden/lockwarden/luascripts"
	"github.com/lockwarden/lockwarden/store"
	"github.com/redis/go-redis/v9"
)

// PyRedisLock is python-redis-lock (redis_lock.Lock): string
// "lock:<name>" set with SET NX [EX expire] to a 24-character id (18
// random bytes in base64), often without expiry. Waiters block in BLPOP on
// the list "lock-signal:<name>"; its release deletes the signal list,
// pushes one element, gives it signal_expire (1000 ms) and deletes the
// lock, all in one script, so exactly one waiter wakes.
const PyRedisLock = "python-redis-lock"

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

var pyRedisLockConvention = &Convention{
	kind: PyRedisLock, keyType: "string",
	claims: func(_ Config, name string) bool {
		return len(name) > len(pyRedisLockPrefix) && strings.HasPrefix(name, pyRedisLockPrefix)
	},
	parse: func(_ Config, k Key) (Found, bool) {
		if !isBase64(k.Value, 18) || k.PTTL == -2 {
			return Found{}, false
		}
		facts := map[string]string{}
		if k.PTTL < 0 {
			facts[FactState] = "no expiry: held until released or force-unlocked"
		}
		return Found{Lock: stringLock(k, PyRedisLock,
			"python-redis-lock: key lock:<name> and a 24-character id (18 random bytes in base64)", facts)}, true
	},
	release: func(ctx context.Context, rdb redis.UniversalClient, _ Config, t Target) (int64, error) {
		return code(pyRedisLockRelease.Run(ctx, rdb,
			[]string{t.Name, pyRedisSignalKey(t.Name)}, t.Holder, pyRedisSignalMS))
	},
	plan: func(t Target) Plan {
		sig := pyRedisSignalKey(t.Name)
		return Plan{Deletes: []string{t.Name},
			Summary: fmt.Sprintf("deletes %q if its id is still %s and pushes one signal on %s (kept %d ms), as python-redis-lock's release does, so one waiter blocked in BLPOP takes the lock", t.Name, t.Holder, sig, pyRedisSignalMS)}
	},
}

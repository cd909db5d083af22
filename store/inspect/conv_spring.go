package inspect

import (
	"context"
	"fmt"
	"strings"

	"github.com/lockwarden/lockwarden/luascripts"
	"github.com/lockwarden/lockwarden/store"
)

// KindSpringLock is Spring Integration's RedisLockRegistry: string
// "<registryKey>:<lockKey>" set with PX expireAfter (60 s by default) to
// the registry's client id (a UUID). In pub/sub mode its unlock publishes
// the lock's key on "<registryKey>-channel:<registryKey>:<lockKey>", where
// the registry's waiters listen (a pattern subscription). The registry key
// is the application's, so the console needs it
// (ObjectPatterns.SpringRegistries).
const KindSpringLock Kind = "spring-lock"

var springLockRelease = store.NewScript(luascripts.Source("springlock_force_release"))

// springChannel is where the registry of the lock at name hears its unlock.
func springChannel(registry, name string) string { return registry + "-channel:" + name }

// springRegistry is the configured registry key name is under; "" if none.
func (p ObjectPatterns) springRegistry(name string) string {
	for _, r := range p.SpringRegistries {
		if rest, ok := strings.CutPrefix(name, r+":"); ok && rest != "" {
			return r
		}
	}
	return ""
}

var springConvention = &convention{
	kind: KindSpringLock, keyType: "string",
	claims: func(p ObjectPatterns, name string) bool { return p.springRegistry(name) != "" },
	parse: func(p ObjectPatterns, k convKey) (convFound, bool) {
		if !isUUID(k.value) || k.pttl <= 0 {
			return convFound{}, false
		}
		r := p.springRegistry(k.name)
		l := stringLock(k, KindSpringLock, "Spring RedisLockRegistry: under the configured registry key "+r+", value a client UUID, with a lease",
			map[string]string{FactClientID: k.value})
		l.Channel = springChannel(r, k.name)
		return convFound{lock: l}, true
	},
	release: func(ctx context.Context, c *Inspector, l *LockInfo, holder string) (int64, error) {
		r := c.ObjectPatterns().springRegistry(l.Name)
		return scriptCode(springLockRelease.Run(ctx, c.rdb, []string{l.Name}, holder, springChannel(r, l.Name)))
	},
	plan: func(l *LockInfo, holder string) ForceUnlockPlan {
		return ForceUnlockPlan{Deletes: []string{l.Name}, Channel: l.Channel, Message: l.Name,
			Summary: fmt.Sprintf("unlinks %q if its client is still %s and publishes the lock's key on %s, as the registry's unlock does, so its waiters retry at once", l.Name, holder, l.Channel)}
	},
}

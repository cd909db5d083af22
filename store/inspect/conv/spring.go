package conv

import (
	"context"
	"fmt"
	"strings"

	"github.com/lockwarden/lockwarden/luascripts"
	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// SpringLock is Spring Integration's RedisLockRegistry: string
// "<registryKey>:<lockKey>" set with PX expireAfter (60 s by default) to
// the registry's client id (a UUID). In pub/sub mode its unlock publishes
// the lock's key on "<registryKey>-channel:<registryKey>:<lockKey>", where
// the registry's waiters listen (a pattern subscription). The registry key
// is the application's, so the console needs it
// (Config.SpringRegistries).
const SpringLock = "spring-lock"

var springLockRelease = store.NewScript(luascripts.Source("springlock_force_release"))

// springChannel is where the registry of the lock at name hears its unlock.
func springChannel(registry, name string) string { return registry + "-channel:" + name }

// springRegistry is the configured registry key name is under; "" if none.
func (p Config) springRegistry(name string) string {
	for _, r := range p.SpringRegistries {
		if rest, ok := strings.CutPrefix(name, r+":"); ok && rest != "" {
			return r
		}
	}
	return ""
}

var springConvention = &Convention{
	kind: SpringLock, keyType: "string",
	claims: func(p Config, name string) bool { return p.springRegistry(name) != "" },
	parse: func(p Config, k Key) (Found, bool) {
		if !wire.IsUUID(k.Value) || k.PTTL <= 0 {
			return Found{}, false
		}
		r := p.springRegistry(k.Name)
		l := stringLock(k, SpringLock, "Spring RedisLockRegistry: under the configured registry key "+r+", value a client UUID, with a lease",
			map[string]string{FactClientID: k.Value})
		l.Channel = springChannel(r, k.Name)
		return Found{Lock: l}, true
	},
	release: func(ctx context.Context, rdb redis.UniversalClient, c Config, t Target) (int64, error) {
		r := c.springRegistry(t.Name)
		return code(springLockRelease.Run(ctx, rdb, []string{t.Name}, t.Holder, springChannel(r, t.Name)))
	},
	plan: func(t Target) Plan {
		return Plan{Deletes: []string{t.Name}, Channel: t.Channel, Message: t.Name,
			Summary: fmt.Sprintf("unlinks %q if its client is still %s and publishes the lock's key on %s, as the registry's unlock does, so its waiters retry at once", t.Name, t.Holder, t.Channel)}
	},
}

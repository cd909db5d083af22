package conv

import (
	"context"
	"fmt"
	"strings"

	"github.com/lockwarden/lockwarden/store/inspect/internal/glob"
	"github.com/redis/go-redis/v9"
)

// DotnetLock is DistributedLock.Redis's RedisDistributedLock (.NET):
// string at the application's key set with SET NX PX (30 s by default,
// extended while held) to "<MachineName>_<pid>_<guid without dashes>",
// released by compare-and-delete; waiters poll. Names are the
// application's, so only keys matching Config.DotnetLocks are read.
const DotnetLock = "dotnet-distributed-lock"

var dotnetConvention = &Convention{
	kind: DotnetLock, keyType: "string",
	claims: func(p Config, name string) bool {
		for _, pat := range p.DotnetLocks {
			if glob.Match(pat, name) {
				return true
			}
		}
		return false
	},
	parse: func(_ Config, k Key) (Found, bool) {
		rest, guid, ok := cutLast(k.Value, '_')
		host, pid, ok2 := cutLast(rest, '_')
		if !ok || !ok2 || len(guid) != 32 || !isHex(strings.ToLower(guid)) || !isDigits(pid) || host == "" || k.PTTL == -2 {
			return Found{}, false
		}
		return Found{Lock: stringLock(k, DotnetLock,
			"DistributedLock.Redis: key under a configured pattern, value <machine>_<pid>_<guid>",
			map[string]string{FactHost: host, FactPID: pid})}, true
	},
	release: func(ctx context.Context, rdb redis.UniversalClient, _ Config, t Target) (int64, error) {
		return code(convCompareDelete.Run(ctx, rdb, []string{t.Name}, t.Holder))
	},
	plan: func(t Target) Plan {
		return Plan{Deletes: []string{t.Name},
			Summary: fmt.Sprintf("deletes %q if its value is still %s, as DistributedLock.Redis's release does; its waiters poll and find it free on their next try", t.Name, t.Holder)}
	},
}

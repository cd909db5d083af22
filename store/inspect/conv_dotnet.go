package inspect

import (
	"context"
	"fmt"
	"strings"
)

// KindDotnetLock is DistributedLock.Redis's RedisDistributedLock (.NET):
// string at the application's key set with SET NX PX (30 s by default,
// extended while held) to "<MachineName>_<pid>_<guid without dashes>",
// released by compare-and-delete; waiters poll. Names are the
// application's, so only keys matching ObjectPatterns.DotnetLocks are read.
const KindDotnetLock Kind = "dotnet-distributed-lock"

var dotnetConvention = &convention{
	kind: KindDotnetLock, keyType: "string",
	claims: func(p ObjectPatterns, name string) bool {
		for _, pat := range p.DotnetLocks {
			if GlobMatch(pat, name) {
				return true
			}
		}
		return false
	},
	parse: func(_ ObjectPatterns, k convKey) (convFound, bool) {
		rest, guid, ok := cutLast(k.value, '_')
		host, pid, ok2 := cutLast(rest, '_')
		if !ok || !ok2 || len(guid) != 32 || !isHex(strings.ToLower(guid)) || !isDigits(pid) || host == "" || k.pttl == -2 {
			return convFound{}, false
		}
		return convFound{lock: stringLock(k, KindDotnetLock,
			"DistributedLock.Redis: key under a configured pattern, value <machine>_<pid>_<guid>",
			map[string]string{FactHost: host, FactPID: pid})}, true
	},
	release: func(ctx context.Context, c *Inspector, l *LockInfo, holder string) (int64, error) {
		return scriptCode(convCompareDelete.Run(ctx, c.rdb, []string{l.Name}, holder))
	},
	plan: func(l *LockInfo, holder string) ForceUnlockPlan {
		return ForceUnlockPlan{Deletes: []string{l.Name},
			Summary: fmt.Sprintf("deletes %q if its value is still %s, as DistributedLock.Redis's release does; its waiters poll and find it free on their next try", l.Name, holder)}
	},
}

// cutLast cuts s around its last sep.
func cutLast(s string, sep byte) (before, after string, ok bool) {
	i := strings.LastIndexByte(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+1:], true
}

package inspect

import (
	"context"
	"fmt"

	"github.com/lockwarden/lockwarden/luascripts"
	"github.com/lockwarden/lockwarden/store"
)

// KindSymfonyLock is Symfony Lock's RedisStore (5.2 and later): a ZSET at
// the resource's name whose members are holders' tokens (base64 of 32
// random bytes) scored by their expiry (epoch ms), the key PEXPIREAT the
// latest; the member "__write__" marks an exclusive lock (one token),
// without it every token is a reader of a shared lock. Expired members
// stay until the next acquire removes them. Waiters poll.
const KindSymfonyLock Kind = "symfony-lock"

const symfonyWrite = "__write__"

var symfonyRelease = store.NewScript(luascripts.Source("symfony_force_release"))

var symfonyConvention = &convention{
	kind: KindSymfonyLock, keyType: "zset",
	parse: func(_ ObjectPatterns, k convKey) (convFound, bool) {
		if len(k.members) == 0 || k.pttl <= 0 {
			return convFound{}, false
		}
		l := &LockInfo{Name: k.name, Kind: KindSymfonyLock, PTTL: k.pttl, Mode: "read",
			Recognised: "Symfony Lock RedisStore: sorted set of 44-character tokens scored by their expiry in ms"}
		write := false
		for _, z := range k.members {
			m, ok := z.Member.(string)
			if !ok || z.Score < 1e12 || z.Score > 1e14 {
				return convFound{}, false
			}
			if m == symfonyWrite {
				write = true
				continue
			}
			if !isBase64(m, 32) {
				return convFound{}, false
			}
			h := Holder{ID: m, Count: 1, LeaseMS: max(0, int64(z.Score)-k.nowMS),
				Facts: map[string]string{FactExpires: rfc3339(int64(z.Score))}}
			if int64(z.Score) <= k.nowMS {
				h.Facts[FactState] = "expired (Symfony drops it at the next acquire)"
			}
			l.Holders = append(l.Holders, h)
		}
		if len(l.Holders) == 0 || (write && len(l.Holders) != 1) {
			return convFound{}, false
		}
		if write {
			l.Mode = "write"
		}
		for i := range l.Holders {
			l.Holders[i].Mode = l.Mode
		}
		if k.card > int64(len(k.members)) {
			l.Recognised += fmt.Sprintf(" (the first %d of %d members read)", len(k.members), k.card)
		}
		sortHolders(l.Holders)
		return convFound{lock: l}, true
	},
	release: func(ctx context.Context, c *Inspector, l *LockInfo, holder string) (int64, error) {
		return scriptCode(symfonyRelease.Run(ctx, c.rdb, []string{l.Name}, holder))
	},
	plan: func(l *LockInfo, holder string) ForceUnlockPlan {
		if len(l.Holders) > 1 {
			return ForceUnlockPlan{RemovesField: holder,
				Summary: fmt.Sprintf("removes the reader %s from %q as Symfony's delete does; the other %d reader(s) keep it", holder, l.Name, len(l.Holders)-1)}
		}
		return ForceUnlockPlan{Deletes: []string{l.Name},
			Summary: fmt.Sprintf("removes the token %s (and the write mark) from %q as Symfony's delete does, which leaves it empty and so deleted; Symfony's waiters poll and take it on their next try", holder, l.Name)}
	},
}

package conv

import (
	"context"
	"fmt"

	"github.com/lockwarden/lockwarden/luascripts"
	"github.com/lockwarden/lockwarden/store"
	"github.com/redis/go-redis/v9"
)

// SymfonyLock is Symfony Lock's RedisStore (5.2 and later): a ZSET at
// the resource's name whose members are holders' tokens (base64 of 32
// random bytes) scored by their expiry (epoch ms), the key PEXPIREAT the
// latest; the member "__write__" marks an exclusive lock (one token),
// without it every token is a reader of a shared lock. Expired members
// stay until the next acquire removes them. Waiters poll.
const SymfonyLock = "symfony-lock"

const symfonyWrite = "__write__"

var symfonyRelease = store.NewScript(luascripts.Source("symfony_force_release"))

var symfonyConvention = &Convention{
	kind: SymfonyLock, keyType: "zset",
	parse: func(_ Config, k Key) (Found, bool) {
		if len(k.Members) == 0 || k.PTTL <= 0 {
			return Found{}, false
		}
		l := &Lock{Name: k.Name, Kind: SymfonyLock, PTTL: k.PTTL, Mode: "read",
			Recognised: "Symfony Lock RedisStore: sorted set of 44-character tokens scored by their expiry in ms"}
		write := false
		for _, z := range k.Members {
			m, ok := z.Member.(string)
			if !ok || z.Score < 1e12 || z.Score > 1e14 {
				return Found{}, false
			}
			if m == symfonyWrite {
				write = true
				continue
			}
			if !isBase64(m, 32) {
				return Found{}, false
			}
			h := Holder{ID: m, Count: 1, LeaseMS: max(0, int64(z.Score)-k.NowMS),
				Facts: map[string]string{FactExpires: rfc3339(int64(z.Score))}}
			if int64(z.Score) <= k.NowMS {
				h.Facts[FactState] = "expired (Symfony drops it at the next acquire)"
			}
			l.Holders = append(l.Holders, h)
		}
		if len(l.Holders) == 0 || (write && len(l.Holders) != 1) {
			return Found{}, false
		}
		if write {
			l.Mode = "write"
		}
		for i := range l.Holders {
			l.Holders[i].Mode = l.Mode
		}
		if k.Card > int64(len(k.Members)) {
			l.Recognised += fmt.Sprintf(" (the first %d of %d members read)", len(k.Members), k.Card)
		}
		sortHolders(l.Holders)
		return Found{Lock: l}, true
	},
	release: func(ctx context.Context, rdb redis.UniversalClient, _ Config, t Target) (int64, error) {
		return code(symfonyRelease.Run(ctx, rdb, []string{t.Name}, t.Holder))
	},
	plan: func(t Target) Plan {
		if t.Holders > 1 {
			return Plan{RemovesField: t.Holder,
				Summary: fmt.Sprintf("removes the reader %s from %q as Symfony's delete does; the other %d reader(s) keep it", t.Holder, t.Name, t.Holders-1)}
		}
		return Plan{Deletes: []string{t.Name},
			Summary: fmt.Sprintf("removes the token %s (and the write mark) from %q as Symfony's delete does, which leaves it empty and so deleted; Symfony's waiters poll and take it on their next try", t.Holder, t.Name)}
	},
}

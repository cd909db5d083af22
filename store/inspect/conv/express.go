package conv

import (
	"context"
	"strings"

	"github.com/lockwarden/lockwarden/luascripts"
	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect/internal/num"
	"github.com/redis/go-redis/v9"
)

// ExpressRateLimit is express-rate-limit's Redis store
// (rate-limit-redis): string "rl:<client key>" (the client's IP by
// default) counting its hits, set to 1 with PX windowMs on the first hit
// of a window and INCRemented after. The limit is the application's:
// the console's counter rule for the key gives it (Limiter.Counter).
// resetKey deletes the key. The counters are one family (inspect.FamilyExpress,
// one key per client, 100,000 of them as easily as 3): discovery leaves
// them out of the limiters and package family reads them in bounded pages.
const ExpressRateLimit = "express-rate-limit"

// ExpressPrefix starts every key of express-rate-limit's Redis store.
const ExpressPrefix = "rl:"

// counterReset deletes a counter: the reset of express-rate-limit's,
// Upstash's and Envoy's windows, as their own resets do.
var counterReset = store.NewScript(luascripts.Source("counter_reset"))

var expressRateLimitConvention = &Convention{
	kind: ExpressRateLimit, limiter: true, keyType: "string",
	claims: func(_ Config, name string) bool {
		return len(name) > len(ExpressPrefix) && strings.HasPrefix(name, ExpressPrefix)
	},
	parse: func(p Config, k Key) (Found, bool) {
		n, ok := num.CanonicalInt(k.Value)
		if !ok || n < 1 || k.PTTL <= 0 {
			return Found{}, false
		}
		lim := &Limiter{Name: k.Name, Kind: ExpressRateLimit, Count: n, TTL: k.PTTL, Counter: true,
			Recognised: "express-rate-limit (rate-limit-redis): a count under rl: with a window's expiry",
			Facts:      map[string]string{"client": strings.TrimPrefix(k.Name, ExpressPrefix)}}
		if p.counterLimit(k.Name) <= 0 {
			lim.Facts[FactLimit] = "set in the application (the middleware's limit; --counter 'rl:*=N/window' tells the console)"
		}
		return Found{Limiter: lim}, true
	},
	reset: func(ctx context.Context, rdb redis.UniversalClient, name string) (int64, error) {
		return code(counterReset.Run(ctx, rdb, []string{name}))
	},
}

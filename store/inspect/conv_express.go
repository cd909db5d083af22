package inspect

import (
	"context"
	"strings"
)

// KindExpressRateLimit is express-rate-limit's Redis store
// (rate-limit-redis): string "rl:<client key>" (the client's IP by
// default) counting its hits, set to 1 with PX windowMs on the first hit
// of a window and INCRemented after. The limit is the application's:
// ObjectPatterns.Counters gives it when a counter rule matches the key.
// resetKey deletes the key. The counters are one family (FamilyExpress,
// one key per client, 100,000 of them as easily as 3): discovery leaves
// them out of the limiters and package family reads them in bounded pages.
const KindExpressRateLimit Kind = "express-rate-limit"

const expressPrefix = "rl:"

var expressRateLimitConvention = &convention{
	kind: KindExpressRateLimit, limiter: true, keyType: "string",
	claims: func(_ ObjectPatterns, name string) bool {
		return len(name) > len(expressPrefix) && strings.HasPrefix(name, expressPrefix)
	},
	parse: func(p ObjectPatterns, k convKey) (convFound, bool) {
		n, ok := parseCanonicalInt(k.value)
		if !ok || n < 1 || k.pttl <= 0 {
			return convFound{}, false
		}
		rule, _ := p.counterRule(k.name)
		lim := counterInfo(k.name, n, k.pttl, rule)
		lim.Kind = KindExpressRateLimit
		lim.Recognised = "express-rate-limit (rate-limit-redis): a count under rl: with a window's expiry"
		lim.Facts = map[string]string{"client": strings.TrimPrefix(k.name, expressPrefix)}
		if !lim.LimitKnown {
			lim.Facts[FactLimit] = "set in the application (the middleware's limit; --counter 'rl:*=N/window' tells the console)"
		}
		return convFound{lim: &lim}, true
	},
	reset: func(ctx context.Context, c *Inspector, l *LimiterInfo) (int64, error) {
		return scriptCode(counterResetScript.Run(ctx, c.rdb, []string{l.Name}))
	},
}

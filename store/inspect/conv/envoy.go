package conv

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect/internal/num"
	"github.com/redis/go-redis/v9"
)

// EnvoyRatelimit is Envoy's rate limit service (envoyproxy/ratelimit):
// string "<prefix><domain>_<key>_<value>_..._<window start>" (the prefix
// empty by default) counting the window's hits (INCRBY), EXPIREd at every
// hit to the unit's seconds plus up to EXPIRATION_JITTER_MAX_SECONDS (300
// by default). The window start is epoch seconds rounded down to the unit
// (second, minute, hour, day, week, 30 days, 365 days). The limits are in
// the service's configuration. A domain's windows are one family
// (inspect.FamilyEnvoy): discovery notes the domain and leaves its keys out of the
// limiters, and package family reads them in bounded pages.
const EnvoyRatelimit = "envoy-ratelimit"

// envoyUnits are the units' lengths in seconds, largest first.
var envoyUnits = []struct {
	name string
	secs int64
}{{"year", 365 * 86400}, {"month", 30 * 86400}, {"week", 7 * 86400}, {"day", 86400}, {"hour", 3600}, {"minute", 60}, {"second", 1}}

// envoyJitter is ratelimit's default EXPIRATION_JITTER_MAX_SECONDS.
const envoyJitter = 300

// envoyKey splits name into its domain, descriptor and window start.
func envoyKey(name string) (domain, desc string, start int64, ok bool) {
	rest, num, ok := cutLast(name, '_')
	if !ok || len(num) < 9 || len(num) > 11 || !isDigits(num) || strings.Count(rest, "_") < 2 {
		return "", "", 0, false
	}
	start, _ = strconv.ParseInt(num, 10, 64)
	domain, desc, _ = strings.Cut(rest, "_")
	return domain, desc, start, domain != ""
}

var envoyConvention = &Convention{
	kind: EnvoyRatelimit, limiter: true, keyType: "string",
	claims: func(_ Config, name string) bool {
		_, _, _, ok := envoyKey(name)
		return ok
	},
	parse: func(_ Config, k Key) (Found, bool) {
		domain, desc, start, _ := envoyKey(k.Name)
		n, ok := num.CanonicalInt(k.Value)
		if !ok || n < 1 || k.PTTL <= 0 {
			return Found{}, false
		}
		nowS, ttlS := k.NowMS/1000, int64(k.PTTL.Seconds())
		unit := int64(0)
		var unitName string
		for _, u := range envoyUnits {
			// The key's window started at start, is not long over (its
			// expiry is set at each hit to the unit plus the jitter), and
			// the expiry left is what such a unit leaves.
			if start%u.secs == 0 && start <= nowS && nowS < start+u.secs+envoyJitter && ttlS <= u.secs+envoyJitter &&
				ttlS+(nowS-start) >= u.secs-1 {
				unit, unitName = u.secs, u.name
				break
			}
		}
		if unit == 0 {
			return Found{}, false
		}
		lim := &Limiter{Name: k.Name, Kind: EnvoyRatelimit, Count: n, TTL: k.PTTL,
			IntervalMS: float64(unit * 1000), AvailableUnknown: true, RejectionsHidden: true,
			Recognised: "Envoy ratelimit: <domain>_<descriptor>_<window start> counting hits, its window start a " + unitName + " boundary matching its expiry",
			Facts: map[string]string{FactDomain: domain, "descriptor": desc, "unit": unitName,
				"window_start": time.Unix(start, 0).UTC().Format(time.RFC3339),
				FactLimit:      "set in the rate limit service's configuration"}}
		return Found{Limiter: lim}, true
	},
	reset: func(ctx context.Context, rdb redis.UniversalClient, name string) (int64, error) {
		return code(counterReset.Run(ctx, rdb, []string{name}))
	},
}

// EnvoyDomain is the domain of an Envoy rate limit window's key (with the
// service's key prefix, which its keys do not tell apart).
func EnvoyDomain(key string) (string, bool) {
	d, _, _, ok := envoyKey(key)
	return d, ok
}

package conv

import (
	"context"
	"strconv"
	"strings"

	"github.com/lockwarden/lockwarden/luascripts"
	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect/internal/num"
	"github.com/redis/go-redis/v9"
)

// UpstashRatelimit is @upstash/ratelimit: every key under its prefix
// "@upstash/ratelimit:" (the default). A fixed or sliding window is a
// string "<prefix>:<identifier>:<window number>" counting the window's
// requests (INCRBY), expiring after the window (fixed) or twice the window
// and a second (sliding, which also reads the previous window's key); a
// token bucket is a hash "<prefix>:<identifier>" of refilledAt (ms) and
// tokens. The limit is the application's, or the dynamic limit in
// "<prefix>:dynamic:global". Deny lists ("<prefix>:denyList:...") are sets
// and not limiters.
const UpstashRatelimit = "upstash-ratelimit"

const upstashPrefix = "@upstash/ratelimit:"

var upstashHashReset = store.NewScript(luascripts.Source("hashlimiter_reset"))

// upstashSkips are keys under the prefix that are no limiter.
func upstashSkips(rest string) bool {
	return strings.HasPrefix(rest, "dynamic:") || strings.HasPrefix(rest, "denyList:") || strings.HasPrefix(rest, "analytics")
}

var upstashConvention = &Convention{
	kind: UpstashRatelimit, limiter: true, keyType: "string",
	claims: func(_ Config, name string) bool {
		rest, ok := strings.CutPrefix(name, upstashPrefix)
		return ok && !upstashSkips(rest)
	},
	parse: func(p Config, k Key) (Found, bool) {
		rest := strings.TrimPrefix(k.Name, upstashPrefix)
		id, nstr, ok := cutLast(rest, ':')
		window, err := strconv.ParseInt(nstr, 10, 64)
		count, ok2 := num.CanonicalInt(k.Value)
		if !ok || id == "" || err != nil || window <= 0 || !ok2 || count < 0 || k.PTTL <= 0 {
			return Found{}, false
		}
		// The window's length is not in the key, but its number is
		// now / length: the length is the one that puts now in this
		// window or the next (the previous window of a sliding one).
		lengthMS := upstashWindow(k.NowMS, window)
		lim := &Limiter{Name: k.Name, Kind: UpstashRatelimit, Count: count, TTL: k.PTTL,
			IntervalMS: float64(lengthMS), AvailableUnknown: true, RejectionsHidden: true,
			Facts: map[string]string{"identifier": id, "window": strconv.FormatInt(window, 10),
				FactLimit: "set in the application (or in " + upstashPrefix + "dynamic:global)"}}
		lim.Recognised = "@upstash/ratelimit: a count under its prefix ending in the window number"
		if lengthMS > 0 && k.PTTL.Milliseconds() > lengthMS {
			lim.Facts[FactLayout] = "sliding window"
			lim.Recognised += "; the expiry is longer than the window, so a sliding window"
		} else {
			lim.Facts[FactLayout] = "fixed or sliding window"
			lim.Recognised += "; fixed and sliding windows look alike until the expiry passes the window"
		}
		if limit := p.counterLimit(k.Name); limit > 0 {
			lim.Limit, lim.LimitKnown, lim.Rate = limit, true, limit
			lim.Available, lim.AvailableUnknown = max(0, limit-count), false
		}
		return Found{Limiter: lim}, true
	},
	reset: func(ctx context.Context, rdb redis.UniversalClient, name string) (int64, error) {
		return code(counterReset.Run(ctx, rdb, []string{name}))
	},
}

// upstashWindow is the window length (ms) that makes window the number of
// the window holding nowMS or the one before it: of the lengths in that
// range, the one in the largest whole unit (day, hour, minute, second,
// ms), as applications write "1 h" or "10 s"; 0 when none fits.
func upstashWindow(nowMS, window int64) int64 {
	if window <= 0 || nowMS <= 0 {
		return 0
	}
	// now in this window or the next: window*L <= now < (window+2)*L.
	lo, hi := nowMS/(window+2)+1, nowMS/window
	for _, unit := range []int64{86_400_000, 3_600_000, 60_000, 1000, 1} {
		if m := (lo + unit - 1) / unit * unit; m <= hi {
			return m
		}
	}
	return 0
}

// upstashBucketConvention is @upstash/ratelimit's token bucket hash.
var upstashBucketConvention = &Convention{
	kind: UpstashRatelimit, limiter: true, keyType: "hash",
	parse: func(_ Config, k Key) (Found, bool) {
		rest, ok := strings.CutPrefix(k.Name, upstashPrefix)
		refilled, ok1 := num.CanonicalInt(k.Fields["refilledAt"])
		tokens, ok2 := num.CanonicalInt(k.Fields["tokens"])
		if !ok || upstashSkips(rest) || len(k.Fields) != 2 || !ok1 || !ok2 || refilled <= 0 {
			return Found{}, false
		}
		return Found{Limiter: &Limiter{Name: k.Name, Kind: UpstashRatelimit, Available: max(0, tokens),
			TTL: k.PTTL, RejectionsHidden: true,
			Recognised: "@upstash/ratelimit: token bucket hash of refilledAt and tokens under its prefix",
			Facts: map[string]string{"identifier": rest, FactLayout: "token bucket", "refilled": rfc3339(refilled),
				FactLimit: "set in the application (refill rate, interval, max tokens)"}}}, true
	},
	reset: func(ctx context.Context, rdb redis.UniversalClient, name string) (int64, error) {
		return code(upstashHashReset.Run(ctx, rdb, []string{name}, "refilledAt", "tokens"))
	},
}

package inspect

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"time"
)

// KindEnvoyRatelimit is Envoy's rate limit service (envoyproxy/ratelimit):
// string "<prefix><domain>_<key>_<value>_..._<window start>" (the prefix
// empty by default) counting the window's hits (INCRBY), EXPIREd at every
// hit to the unit's seconds plus up to EXPIRATION_JITTER_MAX_SECONDS (300
// by default). The window start is epoch seconds rounded down to the unit
// (second, minute, hour, day, week, 30 days, 365 days). The limits are in
// the service's configuration. A domain's windows are one family
// (FamilyEnvoy): discovery notes the domain and leaves its keys out of the
// limiters, and package family reads them in bounded pages.
const KindEnvoyRatelimit Kind = "envoy-ratelimit"

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

var envoyConvention = &convention{
	kind: KindEnvoyRatelimit, limiter: true, keyType: "string",
	claims: func(_ ObjectPatterns, name string) bool {
		_, _, _, ok := envoyKey(name)
		return ok
	},
	parse: func(_ ObjectPatterns, k convKey) (convFound, bool) {
		domain, desc, start, _ := envoyKey(k.name)
		n, ok := parseCanonicalInt(k.value)
		if !ok || n < 1 || k.pttl <= 0 {
			return convFound{}, false
		}
		nowS, ttlS := k.nowMS/1000, int64(k.pttl.Seconds())
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
			return convFound{}, false
		}
		lim := &LimiterInfo{Name: k.name, Kind: KindEnvoyRatelimit, Count: n, TTL: k.pttl,
			IntervalMS: float64(unit * 1000), AvailableUnknown: true, RejectionsHidden: true,
			Recognised: "Envoy ratelimit: <domain>_<descriptor>_<window start> counting hits, its window start a " + unitName + " boundary matching its expiry",
			Facts: map[string]string{FactDomain: domain, "descriptor": desc, "unit": unitName,
				"window_start": time.Unix(start, 0).UTC().Format(time.RFC3339),
				FactLimit:      "set in the rate limit service's configuration"}}
		return convFound{lim: lim}, true
	},
	reset: func(ctx context.Context, c *Inspector, l *LimiterInfo) (int64, error) {
		return scriptCode(counterResetScript.Run(ctx, c.rdb, []string{l.Name}))
	},
}

// EnvoyDomain is the domain of an Envoy rate limit window's key (with the
// service's key prefix, which its keys do not tell apart).
func EnvoyDomain(key string) (string, bool) {
	d, _, _, ok := envoyKey(key)
	return d, ok
}

// noteEnvoyDomain remembers a domain discovery met: its windows are read
// as a family (families.go), not listed one key a row.
func (m *convMemo) noteEnvoyDomain(domain string) {
	if m == nil {
		return
	}
	if _, loaded := m.domains.Load(domain); loaded || m.nDomains.Load() >= MaxFamilies {
		return
	}
	if _, loaded := m.domains.LoadOrStore(domain, struct{}{}); !loaded {
		m.nDomains.Add(1)
	}
}

// envoyDomains are the domains met, sorted.
func (m *convMemo) envoyDomains() []string {
	var out []string
	m.domains.Range(func(k, _ any) bool {
		out = append(out, k.(string))
		return true
	})
	sort.Strings(out)
	return out
}

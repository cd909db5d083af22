package conv

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lockwarden/lockwarden/luascripts"
	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect/internal/num"
	"github.com/redis/go-redis/v9"
)

// Laravel's Redis layouts. Every key starts with the connection's prefix
// and, through the cache, the cache's prefix; both default to the app
// name's slug: "laravel-database-" and "laravel-cache-" (Laravel 12),
// "laravel_database_" and "laravel_cache_" (11), "laravel_database_" and
// "laravel_cache:" (10 and before, where the cache store appended ':').
// Prefixes set another way are given with Config.LaravelPrefixes.

// LaravelLock is a Laravel cache lock (Cache::lock, RedisLock): string
// "<prefixes><name>" set with SET NX EX to the owner, 16 random letters
// and digits (Str::random), released by compare-and-delete. The scheduler
// keeps withoutOverlapping() as "framework/schedule-<sha1>" (24 h unless
// told) and onOneServer() as that name plus the minute "HHMM";
// ShouldBeUnique jobs as "laravel_unique_job:<class>:<id>" and the
// WithoutOverlapping job middleware as "laravel-queue-overlap:<class>:<key>".
// Redis::funnel's slots are "<connection prefix><name><n>" holding 20
// random characters. Waiters poll (block() every 250 ms).
const LaravelLock = "laravel-lock"

// LaravelThrottle is Redis::throttle (DurationLimiter): hash
// "<connection prefix><name>" with start and end (epoch s) of the window
// and count, expiring after twice the decay. The limit is the
// application's.
const LaravelThrottle = "laravel-throttle"

// laravelName cuts the Laravel prefixes off name: the cache's (cache true)
// or the connection's alone; ok false when neither shape fits.
func (p Config) laravelName(name string) (rest string, cache, ok bool) {
	for _, pre := range p.LaravelPrefixes {
		if r, ok := strings.CutPrefix(name, pre); ok && r != "" {
			return r, true, true
		}
	}
	for _, sep := range []string{"-", "_"} {
		i := strings.Index(name, sep+"database"+sep)
		if i <= 0 {
			continue
		}
		slug, after := name[:i], name[i+len(sep+"database"+sep):]
		if !isSlug(slug, sep[0]) || after == "" {
			continue
		}
		cacheSeps := []string{sep + "cache" + sep}
		if sep == "_" {
			cacheSeps = append(cacheSeps, "_cache:")
		}
		for _, cs := range cacheSeps {
			if r, ok := strings.CutPrefix(after, slug+cs); ok && r != "" {
				return r, true, true
			}
		}
		return after, false, true
	}
	return "", false, false
}

// isSlug reports whether s is what Str::slug makes of an app name.
func isSlug(s string, sep byte) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == sep) {
			return false
		}
	}
	return s != ""
}

// laravelOwner reports whether v is a Str::random owner of n characters.
// Laravel's cache serializes every value but numbers, so a cached string
// is never bare; a letter is required so a cached number is not one.
func laravelOwner(v string, n int) bool {
	return len(v) == n && isAlnum(v) && strings.IndexFunc(v, func(r rune) bool { return r > '9' }) >= 0
}

var laravelLockConvention = &Convention{
	kind: LaravelLock, keyType: "string",
	claims: func(p Config, name string) bool {
		_, _, ok := p.laravelName(name)
		return ok
	},
	parse: func(p Config, k Key) (Found, bool) {
		rest, cache, _ := p.laravelName(k.Name)
		if k.PTTL == -2 {
			return Found{}, false
		}
		facts := map[string]string{}
		var why string
		switch {
		case cache && laravelOwner(k.Value, 16):
			why = laravelLockWhat(rest, facts)
		case !cache && laravelOwner(k.Value, 20) && rest[len(rest)-1] >= '1' && rest[len(rest)-1] <= '9':
			why = "Redis::funnel slot (a 20-character id under the connection prefix)"
			facts[FactLayout] = "funnel slot"
		default:
			return Found{}, false
		}
		return Found{Lock: stringLock(k, LaravelLock, "Laravel: "+why, facts)}, true
	},
	release: func(ctx context.Context, rdb redis.UniversalClient, _ Config, t Target) (int64, error) {
		return code(convCompareDelete.Run(ctx, rdb, []string{t.Name}, t.Holder))
	},
	plan: func(t Target) Plan {
		return Plan{Deletes: []string{t.Name},
			Summary: fmt.Sprintf("deletes %q if its owner is still %s, as Laravel's release does; its waiters poll and take it on their next try (the scheduler's next run goes ahead)", t.Name, t.Holder)}
	},
}

// laravelLockWhat names the Laravel feature a cache lock name belongs to.
func laravelLockWhat(rest string, facts map[string]string) string {
	const schedule = "framework/schedule-"
	if h, ok := strings.CutPrefix(rest, schedule); ok && len(h) >= 40 && isHex(h[:40]) {
		switch minute := h[40:]; {
		case minute == "":
			facts[FactLayout] = "scheduler withoutOverlapping()"
			return "the scheduler's withoutOverlapping() mutex (24 h unless told); after a hung run every later run is skipped until it expires"
		case len(minute) == 4 && isDigits(minute):
			facts[FactLayout] = "scheduler onOneServer()"
			facts["minute"] = minute[:2] + ":" + minute[2:]
			return "the scheduler's onOneServer() mutex for the run at " + facts["minute"]
		}
	}
	if job, ok := strings.CutPrefix(rest, "laravel_unique_job:"); ok {
		facts[FactLayout], facts[FactJob] = "ShouldBeUnique job", job
		return "a ShouldBeUnique job's lock"
	}
	if job, ok := strings.CutPrefix(rest, "laravel-queue-overlap:"); ok {
		facts[FactLayout], facts[FactJob] = "WithoutOverlapping job middleware", job
		return "a WithoutOverlapping job middleware's lock"
	}
	facts[FactLayout] = "Cache::lock"
	return "cache lock under the cache prefix with a bare 16-character owner (cached values are serialized)"
}

var laravelThrottleReset = store.NewScript(luascripts.Source("hashlimiter_reset"))

var laravelThrottleConvention = &Convention{
	kind: LaravelThrottle, limiter: true, keyType: "hash",
	parse: func(p Config, k Key) (Found, bool) {
		f := k.Fields
		start, ok1 := num.CanonicalInt(f["start"])
		end, ok2 := num.CanonicalInt(f["end"])
		count, ok3 := num.CanonicalInt(f["count"])
		if len(f) != 3 || !ok1 || !ok2 || !ok3 || end <= start || count < 0 || k.PTTL < 0 {
			return Found{}, false
		}
		decay := end - start
		lim := &Limiter{Name: k.Name, Kind: LaravelThrottle, Count: count, IntervalMS: float64(decay * 1000),
			TTL: time.Duration(end*1000-k.NowMS) * time.Millisecond, AvailableUnknown: true, RejectionsHidden: true,
			Recognised: "Laravel Redis::throttle: hash of exactly start, end and count with an expiry; the limit lives in the application",
			Facts: map[string]string{"window_start": rfc3339(start * 1000), "window_end": rfc3339(end * 1000),
				FactLimit: "set in the application (Redis::throttle()->allow(n))"}}
		if _, cache, ok := p.laravelName(k.Name); ok && !cache {
			lim.Recognised += ", under the connection prefix"
		}
		lim.Facts["decay_s"] = strconv.FormatInt(decay, 10)
		return Found{Limiter: lim}, true
	},
	reset: func(ctx context.Context, rdb redis.UniversalClient, name string) (int64, error) {
		return code(laravelThrottleReset.Run(ctx, rdb, []string{name}, "start", "end", "count"))
	},
}

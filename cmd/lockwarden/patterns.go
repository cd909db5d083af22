package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// Token locks and access counters are plain strings with no marker of
// their own, so the operator names them by pattern: lockwarden never
// guesses that a string is a lock it may delete.

// listFlag is a repeatable flag that also takes comma-separated lists. It
// keeps the values joined by commas, so configs that hold it stay
// comparable with ==; a pattern therefore cannot contain a comma.
type listFlag string

func (l *listFlag) String() string { return string(*l) }

func (l *listFlag) Set(v string) error {
	if *l != "" && v != "" {
		*l += ","
	}
	*l += listFlag(v)
	return nil
}

// items are the non-empty, trimmed entries.
func (l listFlag) items() []string {
	var out []string
	for _, s := range strings.Split(string(l), ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

const (
	tokenLockFlagUsage    = "Redis glob of string keys that are SET NX PX token locks (repeatable or comma-separated; env LOCKWARDEN_TOKEN_LOCK_PATTERNS)"
	deadlineLockFlagUsage = "Redis glob of string keys that are timestamp locks: SETNX of a deadline in epoch ms, taken over with GETSET once it passed (repeatable or comma-separated; env LOCKWARDEN_DEADLINE_LOCK_PATTERNS)"
	counterFlagUsage      = "INCR+EXPIRE access counters as `pattern=limit/window`, e.g. 'ip:*=30/10s'; '=limit/window' may be left out when the limit is not known (repeatable or comma-separated; env LOCKWARDEN_COUNTERS)"
)

// objectPatterns turns the three flags into store patterns. Errors are one
// line naming the flag and the value.
func objectPatterns(tokenLocks, counters, deadlineLocks listFlag) (inspect.ObjectPatterns, error) {
	// The console shows each counter pattern's keys as one family
	// (store/inspect/families.go), however many IPs it counts.
	p := inspect.ObjectPatterns{GroupCounters: true}
	p.TokenLocks = tokenLocks.items()
	p.DeadlineLocks = deadlineLocks.items()
	for _, s := range counters.items() {
		r, err := parseCounterRule(s)
		if err != nil {
			return inspect.ObjectPatterns{}, fmt.Errorf("invalid --counter %q: %s (want pattern=limit/window, e.g. 'ip:*=30/10s')", s, err)
		}
		p.Counters = append(p.Counters, r)
	}
	if err := p.Validate(); err != nil {
		return inspect.ObjectPatterns{}, fmt.Errorf("invalid pattern: %v", err)
	}
	return p, nil
}

// parseCounterRule reads "pattern=limit/window" or a bare "pattern". The
// last '=' separates, so a pattern may itself contain '='.
func parseCounterRule(s string) (inspect.CounterRule, error) {
	i := strings.LastIndexByte(s, '=')
	if i < 0 {
		return inspect.CounterRule{Pattern: s}, nil
	}
	pattern, spec := strings.TrimSpace(s[:i]), strings.TrimSpace(s[i+1:])
	if pattern == "" {
		return inspect.CounterRule{}, fmt.Errorf("the pattern is empty")
	}
	limitText, windowText, ok := strings.Cut(spec, "/")
	if !ok {
		return inspect.CounterRule{}, fmt.Errorf("%q has no window after the limit", spec)
	}
	limit, err := strconv.ParseInt(strings.TrimSpace(limitText), 10, 64)
	if err != nil || limit < 1 {
		return inspect.CounterRule{}, fmt.Errorf("the limit %q is not a whole number of at least 1", limitText)
	}
	window, err := time.ParseDuration(strings.TrimSpace(windowText))
	if err != nil || window < time.Millisecond {
		return inspect.CounterRule{}, fmt.Errorf("the window %q is not a duration of at least 1ms such as 10s or 1m", windowText)
	}
	return inspect.CounterRule{Pattern: pattern, Limit: limit, Window: window}, nil
}

// conventionFlags name the framework conventions whose keys cannot say
// which application wrote them: the others (ShedLock, python-redis-lock,
// BullMQ, sidekiq-unique-jobs, Symfony, default Laravel prefixes,
// bottleneck, express-rate-limit, Upstash, Envoy) are recognised from
// their key and value with no flag (store/inspect/conv).
type conventionFlags struct {
	LaravelPrefixes  listFlag // --laravel-prefix
	SpringRegistries listFlag // --spring-lock-registry
	DotnetLocks      listFlag // --dotnet-lock-pattern
}

func (c *conventionFlags) register(fs *flag.FlagSet) map[string]string {
	fs.Var(&c.LaravelPrefixes, "laravel-prefix",
		"key `prefix` of a Laravel application's cache (connection and cache prefix together, e.g. 'shop_database_shop_cache:') when not derived from its app name (repeatable or comma-separated; env LOCKWARDEN_LARAVEL_PREFIXES)")
	fs.Var(&c.SpringRegistries, "spring-lock-registry",
		"registry `KEY` of a Spring Integration RedisLockRegistry: its locks are KEY:<lock> (repeatable or comma-separated; env LOCKWARDEN_SPRING_LOCK_REGISTRIES)")
	fs.Var(&c.DotnetLocks, "dotnet-lock-pattern",
		"Redis glob of DistributedLock.Redis (.NET) lock keys (repeatable or comma-separated; env LOCKWARDEN_DOTNET_LOCK_PATTERNS)")
	return map[string]string{
		"laravel-prefix":       "LOCKWARDEN_LARAVEL_PREFIXES",
		"spring-lock-registry": "LOCKWARDEN_SPRING_LOCK_REGISTRIES",
		"dotnet-lock-pattern":  "LOCKWARDEN_DOTNET_LOCK_PATTERNS",
	}
}

// apply adds the conventions' settings to p and checks them.
func (c conventionFlags) apply(p inspect.ObjectPatterns) (inspect.ObjectPatterns, error) {
	p.LaravelPrefixes = c.LaravelPrefixes.items()
	p.SpringRegistries = c.SpringRegistries.items()
	p.DotnetLocks = c.DotnetLocks.items()
	if err := p.Validate(); err != nil {
		return inspect.ObjectPatterns{}, fmt.Errorf("invalid pattern: %v", err)
	}
	return p, nil
}

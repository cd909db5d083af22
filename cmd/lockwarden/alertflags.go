package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lockwarden/lockwarden/web"
)

// alertFlags are serve's alert and metrics flags as given; "" keeps the
// console's default.
type alertFlags struct {
	Webhook      string
	For          [len(ruleFlags)]string // by ruleFlags index
	HeldTooLong  string
	WaitTooLong  string
	RejectRatio  string
	MetricsMatch string
	MetricsTop   string
}

// ruleFlags are the rules whose flag sets their "for" duration (or "off").
var ruleFlags = [...]struct{ flag, rule, what string }{
	{"alert-lock-deadlock", web.RuleLockDeadlock, "how long a wait-for cycle between lock holders must last (default 0s)"},
	{"alert-lock-no-expiry", web.RuleLockNoExpiry, "how long a lock may exist without expiry (default 30s)"},
	{"alert-lock-deadline-passed", web.RuleLockDeadlinePassed, "how long a lock may outlive its deadline (default 0s)"},
	{"alert-lock-renewed-by-gone-client", web.RuleLockRenewedByGoneClient, "how long a lock may be renewed for a gone client (default 30s)"},
	{"alert-reject-ratio-for", web.RuleLimiterRejectRatio, "how long a limiter's reject ratio over the last 10 s must stay over the threshold before it fires (default 0s)"},
	{"alert-lock-wait-too-long-for", web.RuleLockWaitTooLong, "how long a lock's p99 wait over the last 10 s must stay over the threshold before it fires (default 1m)"},
	{"alert-limiter-errors", web.RuleLimiterErrors, "how long a limiter must keep failing acquires (default 10s)"},
	{"alert-redis-down", web.RuleRedisDown, "how long Redis may not answer (default 10s)"},
	{"alert-node-down", web.RuleNodeDown, "how long one Redis node of several may not answer (default 10s)"},
	{"alert-auth-failures", web.RuleAuthFailures, "how long a burst of wrong tokens (20 a minute) must go on (default 0s)"},
	{"alert-lock-lease-lost", web.RuleLockLeaseLost, "how long after a lease violation (exclusion may have been broken) it fires (default 0s)"},
	{"alert-redis-evicts-locks", web.RuleRedisEvictsLocks, "how long a master may keep a maxmemory-policy that evicts lock keys (default 0s)"},
	{"alert-redis-acks-no-replica", web.RuleRedisAcksNoReplica, "how long clients may ask more replica acknowledgements than a master has replicas (default 0s)"},
	{"alert-redis-fencing-not-persisted", web.RuleRedisFencingNotKept, "how long fencing counters may live on a master that persists nothing (default 0s)"},
	{"alert-redis-keyspace-events-off", web.RuleRedisKeyspaceEventsOff, "how long a master under a memory limit may publish no evicted events (default 0s)"},
}

// register adds the flags to fs and returns their environment variables
// (LOCKWARDEN_ and the flag name in upper case).
func (a *alertFlags) register(fs *flag.FlagSet) map[string]string {
	fs.StringVar(&a.Webhook, "alert-webhook", "", "`URL` that receives Alertmanager-style JSON when an alert fires or resolves")
	for i, r := range ruleFlags {
		fs.StringVar(&a.For[i], r.flag, "", "`DURATION` or off: "+r.what+"; alert "+r.rule)
	}
	fs.StringVar(&a.HeldTooLong, "alert-lock-held-too-long", "", "`DURATION` or off: alert lock-held-too-long when a lock is held longer (default 5m)")
	fs.StringVar(&a.WaitTooLong, "alert-lock-wait-too-long", "", "`DURATION` or off: alert lock-wait-too-long when a lock's p99 wait over the last 10 s is longer (default 5s)")
	fs.StringVar(&a.RejectRatio, "alert-reject-ratio", "", "`RATIO` (0.5 or 50%) or off: alert limiter-reject-ratio over this share of rejected attempts (default 0.5)")
	fs.StringVar(&a.MetricsMatch, "metrics-match", "", "`GLOB`: only objects whose names match get per-object series in /metrics")
	fs.StringVar(&a.MetricsTop, "metrics-top", "", "`N`: per-object series in /metrics for at most N locks, N limiters and N alerts, busiest first; 0 for none (default 200)")
	env := map[string]string{}
	fs.VisitAll(func(f *flag.Flag) {
		if strings.HasPrefix(f.Name, "alert-") || strings.HasPrefix(f.Name, "metrics-") {
			env[f.Name] = "LOCKWARDEN_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		}
	})
	return env
}

// console turns the flags into the console's settings, or says which value
// is wrong.
func (a alertFlags) console() (cfg web.AlertConfig, match string, top int, err error) {
	cfg = web.AlertConfig{Webhook: a.Webhook, Off: map[string]bool{}, For: map[string]time.Duration{}}
	if a.Webhook != "" {
		if err := web.CheckWebhookURL(a.Webhook); err != nil {
			return cfg, "", 0, fmt.Errorf("--alert-webhook: %v", err)
		}
	}
	for i, r := range ruleFlags {
		d, off, err := durationOrOff(a.For[i])
		if err != nil {
			return cfg, "", 0, fmt.Errorf("--%s: %v", r.flag, err)
		}
		switch {
		case off:
			cfg.Off[r.rule] = true
		case a.For[i] != "":
			cfg.For[r.rule] = d
		}
	}
	if cfg.HeldTooLong, err = threshold(&cfg, "alert-lock-held-too-long", a.HeldTooLong, web.RuleLockHeldTooLong); err != nil {
		return cfg, "", 0, err
	}
	if cfg.WaitTooLong, err = threshold(&cfg, "alert-lock-wait-too-long", a.WaitTooLong, web.RuleLockWaitTooLong); err != nil {
		return cfg, "", 0, err
	}
	if r := strings.TrimSpace(a.RejectRatio); r == "off" {
		cfg.Off[web.RuleLimiterRejectRatio] = true
	} else if r != "" {
		pct := strings.HasSuffix(r, "%")
		v, perr := strconv.ParseFloat(strings.TrimSuffix(r, "%"), 64)
		if pct {
			v /= 100
		}
		if perr != nil || !(v > 0 && v <= 1) {
			return cfg, "", 0, fmt.Errorf("--alert-reject-ratio: %q is not a ratio in (0, 1] such as 0.5 or 50%% (or off)", a.RejectRatio)
		}
		cfg.RejectRatio = v
	}
	if a.MetricsTop != "" {
		n, perr := strconv.Atoi(a.MetricsTop)
		if perr != nil || n < 0 {
			return cfg, "", 0, fmt.Errorf("--metrics-top: %q is not a whole number >= 0", a.MetricsTop)
		}
		top = n
		if n == 0 {
			top = -1 // web's "none"
		}
	}
	return cfg, a.MetricsMatch, top, nil
}

// durationOrOff parses a rule flag: "" (default), "off" or a duration >= 0.
func durationOrOff(s string) (d time.Duration, off bool, err error) {
	switch s = strings.TrimSpace(s); s {
	case "":
		return 0, false, nil
	case "off":
		return 0, true, nil
	}
	d, err = time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, false, fmt.Errorf("%q is not a duration such as 30s or 5m (or off)", s)
	}
	return d, false, nil
}

// threshold reads a "DURATION or off" threshold flag: off turns its rule
// off, "" keeps the default (0).
func threshold(cfg *web.AlertConfig, flag, value, rule string) (time.Duration, error) {
	d, off, err := durationOrOff(value)
	switch {
	case err != nil:
		return 0, fmt.Errorf("--%s: %v", flag, err)
	case off:
		cfg.Off[rule] = true
	case value != "" && d <= 0:
		return 0, fmt.Errorf("--%s: %q must be more than 0 (or off)", flag, value)
	}
	return d, nil
}

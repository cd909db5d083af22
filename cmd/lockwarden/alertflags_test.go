package main

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/web"
)

func TestCmdAlertFlags(t *testing.T) {
	env := map[string]string{"LOCKWARDEN_ALERT_WEBHOOK": "http://127.0.0.1:9093/hook", "LOCKWARDEN_METRICS_TOP": "7",
		"LOCKWARDEN_ALERT_REDIS_DOWN": "1m"}
	cfg, err := parseServeFlags([]string{"--alert-lock-held-too-long", "90s", "--alert-reject-ratio", "80%",
		"--alert-lock-no-expiry", "off", "--alert-limiter-errors", "0s", "--alert-redis-down", "20s", "--metrics-match", "app:*",
		"--alert-lock-wait-too-long", "2s", "--alert-lock-wait-too-long-for", "30s", "--alert-lock-deadlock", "5s",
		"--alert-redis-keyspace-events-off", "off", "--alert-lock-lease-lost", "1s"},
		func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ac, match, top, err := cfg.Alerts.console()
	if err != nil {
		t.Fatal(err)
	}
	if ac.Webhook != env["LOCKWARDEN_ALERT_WEBHOOK"] || ac.HeldTooLong != 90*time.Second || ac.RejectRatio != 0.8 ||
		!ac.Off[web.RuleLockNoExpiry] || !ac.Off[web.RuleRedisKeyspaceEventsOff] || len(ac.Off) != 2 || match != "app:*" || top != 7 {
		t.Errorf("config = %+v, match %q, top %d", ac, match, top)
	}
	if d, ok := ac.For[web.RuleLimiterErrors]; !ok || d != 0 {
		t.Errorf("limiter-errors for = %v, %v; want an explicit 0", d, ok)
	}
	if ac.WaitTooLong != 2*time.Second || ac.For[web.RuleLockWaitTooLong] != 30*time.Second {
		t.Errorf("lock-wait-too-long: threshold %v, for %v", ac.WaitTooLong, ac.For[web.RuleLockWaitTooLong])
	}
	if ac.For[web.RuleLockLeaseLost] != time.Second {
		t.Errorf("lock-lease-lost for = %v", ac.For[web.RuleLockLeaseLost])
	}
	if ac.For[web.RuleLockDeadlock] != 5*time.Second {
		t.Errorf("lock-deadlock for = %v", ac.For[web.RuleLockDeadlock])
	}
	if ac.For[web.RuleRedisDown] != 20*time.Second { // the flag wins over the environment
		t.Errorf("redis-down for = %v", ac.For[web.RuleRedisDown])
	}
	if _, _, top, _ := (alertFlags{MetricsTop: "0"}).console(); top >= 0 {
		t.Errorf("--metrics-top 0 gives %d, want web's none (negative)", top)
	}
}

func TestCmdAlertFlagsRejectBadValues(t *testing.T) {
	for _, args := range [][]string{
		{"--alert-webhook", "ftp://x"},
		{"--alert-reject-ratio", "1.5"},
		{"--alert-reject-ratio", "0"},
		{"--alert-lock-held-too-long", "0s"},
		{"--alert-lock-wait-too-long", "0s"},
		{"--alert-lock-wait-too-long", "never"},
		{"--alert-redis-down", "-1s"},
		{"--alert-node-down", "soon"},
		{"--alert-lock-deadlock", "-1s"},
		{"--alert-redis-evicts-locks", "later"},
		{"--metrics-top", "-3"},
	} {
		var stderr strings.Builder
		if _, err := parseServeFlags(args, func(string) string { return "" }, &stderr); err != errUsage {
			t.Errorf("%v: err %v, want usage", args, err)
		}
		if !strings.Contains(stderr.String(), args[0]) {
			t.Errorf("%v: message does not name the flag: %q", args, stderr.String())
		}
	}
}

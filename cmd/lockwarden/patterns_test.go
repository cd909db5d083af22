package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/inspect/walk"
	"github.com/lockwarden/lockwarden/store/redistest"
)

func TestKindsFlagsParse(t *testing.T) {
	env := map[string]string{
		"LOCKWARDEN_TOKEN_LOCK_PATTERNS": "env:lock:*",
		"LOCKWARDEN_COUNTERS":            "env:ip:*=5/1m",
	}
	getenv := func(k string) string { return env[k] }

	cfg, err := parseServeFlags([]string{"--token-lock-pattern", "job:*", "--token-lock-pattern=a:*, b:*",
		"--counter", "ip:*=30/10s", "--counter", "user:*"}, getenv, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := objectPatterns(cfg.TokenLocks, cfg.Counters, cfg.DeadlineLocks)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(p.TokenLocks, " ") != "job:* a:* b:*" {
		t.Errorf("token lock patterns %q (flags must win over the environment)", p.TokenLocks)
	}
	want := []inspect.CounterRule{{Pattern: "ip:*", Limit: 30, Window: 10 * time.Second}, {Pattern: "user:*"}}
	if len(p.Counters) != 2 || p.Counters[0] != want[0] || p.Counters[1] != want[1] {
		t.Errorf("counters %+v, want %+v", p.Counters, want)
	}

	cfg, err = parseServeFlags(nil, getenv, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if p, _ = objectPatterns(cfg.TokenLocks, cfg.Counters, cfg.DeadlineLocks); len(p.TokenLocks) != 1 || p.TokenLocks[0] != "env:lock:*" ||
		len(p.Counters) != 1 || p.Counters[0] != (inspect.CounterRule{Pattern: "env:ip:*", Limit: 5, Window: time.Minute}) {
		t.Errorf("from the environment: %+v", p)
	}
}

func TestKindsFlagsRejectBadValues(t *testing.T) {
	for _, bad := range []string{"ip:*=0/10s", "ip:*=x/10s", "ip:*=30", "ip:*=30/soon", "ip:*=30/0s", "=30/10s"} {
		var stderr bytes.Buffer
		code := run(context.Background(), []string{"serve", "--counter", bad}, func(string) string { return "" }, &bytes.Buffer{}, &stderr)
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		if code != exitUsage || len(lines) != 1 || !strings.Contains(lines[0], "--counter") || !strings.Contains(lines[0], bad) {
			t.Errorf("--counter %q: exit %d, stderr %q; want exit 2 and one line naming it", bad, code, stderr.String())
		}
	}
	var stderr bytes.Buffer
	if _, err := parseDemoFlags([]string{"--token-lock-pattern", strings.Repeat("x", store.MaxNameLen+1)}, func(string) string { return "" }, &stderr); !errors.Is(err, errUsage) ||
		strings.Count(strings.TrimSpace(stderr.String()), "\n") != 0 {
		t.Errorf("an overlong pattern: %v, %q", err, stderr.String())
	}
}

// The demo's token lock and per-IP counter are what the console lists with
// the patterns demo mode registers.
func TestKindsFlagsDemoTrafficListed(t *testing.T) {
	rdb := trafficClient(t)
	prefix := redistest.Prefix(t)
	ctx, cancel := context.WithCancel(context.Background())
	var n trafficCounts
	done := make(chan error, 1)
	go func() { done <- runTrafficCounted(ctx, rdb, trafficConfig{Prefix: prefix}, &n) }()
	defer func() {
		cancel()
		<-done
	}()

	console := inspect.New(rdb, &inspect.Options{Patterns: trafficPatterns(prefix)})
	var tokenSeen, counterSeen, partnerSeen bool
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) && !(tokenSeen && counterSeen && partnerSeen) {
		d, err := walk.Discover(ctx, console, prefix+"*")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range d.Locks {
			if l.Name == prefix+demoTokenLock && l.Kind == inspect.KindTokenLock && len(l.Holders) == 1 && l.PTTL > 0 {
				tokenSeen = true
			}
		}
		for _, l := range d.Limiters {
			if l.Name == prefix+demoHits && l.Kind == inspect.KindCounter && l.LimitKnown && l.Limit == demoHitLimit && l.Count > 0 {
				counterSeen = true
			}
			if l.Name == prefix+demoPartner && l.Kind == inspect.KindRedissonLimiter && l.Algorithm == inspect.AlgorithmSlidingWindow {
				partnerSeen = true
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !tokenSeen || !counterSeen || !partnerSeen {
		t.Fatalf("token lock listed %v, counter listed %v, Redisson limiter listed %v (taken %d, hits %d, partner %d)",
			tokenSeen, counterSeen, partnerSeen, n.tokenTaken.Load(), n.hitsAllowed.Load(), n.partnerAcquired.Load())
	}
	// Without the patterns the same strings are not listed.
	d, err := walk.Discover(ctx, inspect.New(rdb, nil), prefix+"*")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range d.Locks {
		if l.Name == prefix+demoTokenLock {
			t.Error("a token lock was listed without a pattern")
		}
	}
	for _, l := range d.Limiters {
		if l.Name == prefix+demoHits {
			t.Error("a counter was listed without a pattern")
		}
	}
}

// The conventions' flags: repeatable, comma-separated, from the
// environment when not given, and checked like the other patterns.
func TestConventionFlagsParse(t *testing.T) {
	env := map[string]string{"LOCKWARDEN_SPRING_LOCK_REGISTRIES": "env-registry", "LOCKWARDEN_DOTNET_LOCK_PATTERNS": "env:dist:*"}
	cfg, err := parseServeFlags([]string{"--laravel-prefix", "shop:cache:", "--spring-lock-registry", "orders,payments",
		"--dotnet-lock-pattern", "dist:*"}, func(k string) string { return env[k] }, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := cfg.patterns()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(p.LaravelPrefixes, " ") != "shop:cache:" || strings.Join(p.SpringRegistries, " ") != "orders payments" ||
		strings.Join(p.DotnetLocks, " ") != "dist:*" {
		t.Errorf("patterns %+v", p)
	}
	cfg, err = parseServeFlags(nil, func(k string) string { return env[k] }, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := cfg.patterns(); strings.Join(p.SpringRegistries, " ") != "env-registry" || strings.Join(p.DotnetLocks, " ") != "env:dist:*" {
		t.Errorf("from the environment: %+v", p)
	}
	var stderr bytes.Buffer
	long := strings.Repeat("x", store.MaxNameLen+1)
	if code := run(context.Background(), []string{"serve", "--spring-lock-registry", long}, func(string) string { return "" }, &bytes.Buffer{}, &stderr); code != exitUsage ||
		!strings.Contains(stderr.String(), "spring_lock_registry") {
		t.Errorf("a registry key longer than a name: exit %d, %q", code, stderr.String())
	}
}

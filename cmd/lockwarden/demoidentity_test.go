package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/inspect/walk"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// The demo's clients say who they are, and it leaves a SETNX lock without
// expiry and a deadline lock behind for the alerts, removed when it stops.
func TestCmdTrafficIdentitiesAndStuckLocks(t *testing.T) {
	rdb := trafficClient(t)
	prefix := redistest.Prefix(t)
	insp := inspect.New(rdb, &inspect.Options{Patterns: trafficPatterns(prefix)})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- runTraffic(ctx, rdb, trafficConfig{Prefix: prefix}) }()

	var apps map[string]string
	var kinds map[string]inspect.LockInfo
	for i := 0; i < 100; i++ {
		time.Sleep(50 * time.Millisecond)
		s, _, err := insp.SampleWith(t.Context(), nil, nil, inspect.SampleOptions{Clients: true})
		if err != nil {
			t.Fatal(err)
		}
		reg := s.Registry
		d, err := walk.Discover(t.Context(), insp, prefix+"*")
		if err != nil {
			t.Fatal(err)
		}
		kinds = map[string]inspect.LockInfo{}
		for _, l := range d.Locks {
			kinds[l.Name] = l
		}
		apps = map[string]string{}
		for _, l := range d.Locks {
			for _, h := range l.Holders {
				if ci, ok := reg.Lookup(h.ID); ok {
					apps[ci.App] = ci.ID
				}
			}
		}
		if len(apps) == 2 && kinds[prefix+demoDeadline].Kind != "" {
			break
		}
	}
	if apps["orders-api"] == "" || apps["billing-worker"] == "" {
		t.Fatalf("holders' clients = %v, want orders-api and billing-worker", apps)
	}
	if l := kinds[prefix+demoDeadline]; l.Kind != inspect.KindDeadlineLock || l.Deadline.IsZero() {
		t.Errorf("deadline lock = %+v", l)
	}
	if l := kinds[prefix+demoSetnxStuck]; l.Kind != inspect.KindTokenLock || l.PTTL >= 0 {
		t.Errorf("SETNX lock without expiry = %+v", l)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	bg := t.Context()
	for _, k := range []string{prefix + demoDeadline, prefix + demoSetnxStuck} {
		if rdb.Exists(bg, k).Val() != 0 {
			t.Errorf("%s left behind", k)
		}
	}
	for app, id := range apps {
		if rdb.HExists(bg, "lw:{lw-clients}:clients", id).Val() {
			t.Errorf("%s still registered after the traffic stopped", app)
		}
	}
}

func TestDeadlineLockPatternFlag(t *testing.T) {
	var stderr strings.Builder
	cfg, err := parseServeFlags([]string{"--deadline-lock-pattern", "jobs:*,batch:*"}, func(string) string { return "" }, &stderr)
	if err != nil {
		t.Fatal(err, stderr.String())
	}
	p, err := objectPatterns(cfg.TokenLocks, cfg.Counters, cfg.DeadlineLocks)
	if err != nil || len(p.DeadlineLocks) != 2 || p.DeadlineLocks[1] != "batch:*" {
		t.Fatalf("patterns = %+v, %v", p, err)
	}
	env := map[string]string{"LOCKWARDEN_DEADLINE_LOCK_PATTERNS": "env:deadline:*"}
	cfg, err = parseServeFlags(nil, func(k string) string { return env[k] }, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if p, _ = objectPatterns(cfg.TokenLocks, cfg.Counters, cfg.DeadlineLocks); len(p.DeadlineLocks) != 1 || p.DeadlineLocks[0] != "env:deadline:*" {
		t.Fatalf("from the environment: %+v", p)
	}
	dcfg, err := parseDemoFlags([]string{"--deadline-lock-pattern", "mine:*"}, func(string) string { return "" }, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if dp, _ := demoPatterns(dcfg); len(dp.DeadlineLocks) != 2 || dp.DeadlineLocks[1] != "mine:*" {
		t.Fatalf("demo patterns = %+v", dp.DeadlineLocks)
	}
}

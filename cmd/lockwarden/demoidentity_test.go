package main

import (
	"context"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
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
		reg, err := insp.ReadRegistry(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		d, err := insp.Discover(t.Context(), prefix+"*")
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

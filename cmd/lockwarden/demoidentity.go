package main

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store"
)

// The demo's "who holds it" and alert cases: its two application clients
// register as named services, a SETNX lock without expiry and a timestamp
// lock past its deadline are left behind by "crashed" jobs, and a limiter
// is flooded far above its rate.
const (
	// demoSetnxStuck is a SETNX lock whose EXPIRE never ran (a client
	// that died between the two): lock-no-expiry fires after half a minute.
	demoSetnxStuck = "demo:token:nightly-export"
	// demoDeadline is a timestamp lock (SETNX of a deadline), taken with
	// a deadline demoDeadlineIn ahead and never released:
	// lock-deadline-passed fires once it is behind.
	demoDeadline   = "demo:deadline:invoice-batch"
	demoDeadlineIn = 5 * time.Second
	// demoFlood is a bucket of 10 permits per second asked for 50:
	// limiter-reject-ratio fires once ten seconds of it are seen.
	demoFlood      = "demo:flood"
	demoFloodEvery = 20 * time.Millisecond
)

// demoApps are the two application instances of the demo, registered
// under service names so the console says who holds what.
func demoApps(rdb redis.UniversalClient) []*store.Client {
	return []*store.Client{
		store.New(rdb, &store.Options{App: "orders-api", Version: "v1.4.2"}),
		store.New(rdb, &store.Options{App: "billing-worker", Version: "v2.0.1"}),
	}
}

// leaveStuckLocks writes the SETNX lock without expiry and the deadline
// lock whose holder never comes back; remove deletes both (the traffic's
// own key prefix, so tests on a shared server leave nothing).
func (t *traffic) leaveStuckLocks(ctx context.Context) (remove func(), err error) {
	rdb := t.apps[0].Redis()
	setnx, deadline := t.cfg.Prefix+demoSetnxStuck, t.cfg.Prefix+demoDeadline
	if err := rdb.SetNX(ctx, setnx, "export-"+strconv.FormatInt(time.Now().UnixNano(), 36), 0).Err(); err != nil {
		return nil, err
	}
	due := time.Now().Add(demoDeadlineIn).UnixMilli()
	if err := rdb.SetNX(ctx, deadline, strconv.FormatInt(due, 10), 0).Err(); err != nil {
		return nil, err
	}
	return func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		rdb.Del(dctx, setnx)
		rdb.Del(dctx, deadline)
	}, nil
}

// floodWorker asks the flood bucket for a permit every demoFloodEvery.
func (t *traffic) floodWorker(ctx context.Context) {
	name := t.cfg.Prefix + demoFlood
	for sleep(ctx, demoFloodEvery) {
		_, _ = acquireBucket(ctx, t.apps[1], name, 1)
	}
}

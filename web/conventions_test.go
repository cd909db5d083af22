package web

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// Another library's lock and limiter are listed like every other kind:
// /api/locks and /api/limiters with their kind, holder facts and why they
// were recognised, the ?kind= filter, their pages, and a reset through the
// API as the library's own.
func TestConventionsListedLikeEveryKind(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	// BullMQ on a Cluster needs its prefix hash-tagged, so a job's lock and
	// hash share a slot: {bull} here.
	job := e.prefix + "{bull}:mail:17"
	lockKey := job + ":lock"
	throttle := e.prefix + "app-database-throttle"
	e.t.Cleanup(func() { e.rdb.Del(context.Background(), job, lockKey, throttle) })
	token := "5c7d1e2f-3a4b-4c5d-8e6f-7a8b9c0d1e2f:3"
	e.rdb.Set(ctx, lockKey, token, time.Minute)
	e.rdb.HSet(ctx, job, "name", "welcome-mail", "processedOn", time.Now().UnixMilli(), "pb", "mailer-1")
	now := time.Now().Unix()
	e.rdb.HSet(ctx, throttle, "start", now, "end", now+60, "count", 9)
	e.rdb.Expire(ctx, throttle, 2*time.Minute)

	e.synced()
	var locks struct {
		Locks []struct {
			Name       string           `json:"name"`
			Kind       string           `json:"kind"`
			Recognised string           `json:"recognised"`
			Holders    []inspect.Holder `json:"holders"`
		}
	}
	e.getJSON("/api/locks?kind="+string(inspect.KindBullMQJobLock), 200, &locks)
	if len(locks.Locks) != 1 {
		t.Fatalf("/api/locks?kind=bullmq-job-lock = %+v", locks.Locks)
	}
	l := locks.Locks[0]
	if l.Name != lockKey || l.Recognised == "" || len(l.Holders) != 1 || l.Holders[0].ID != token ||
		l.Holders[0].Facts["job_name"] != "welcome-mail" || !strings.Contains(l.Holders[0].Who, "worker 5c7d1e2f") {
		t.Errorf("lock %+v", l)
	}
	var lims struct {
		Limiters []struct {
			Name       string            `json:"name"`
			Kind       string            `json:"kind"`
			Count      *int64            `json:"count"`
			Recognised string            `json:"recognised"`
			Facts      map[string]string `json:"facts"`
		}
	}
	e.getJSON("/api/limiters?kind="+string(inspect.KindLaravelThrottle), 200, &lims)
	if len(lims.Limiters) != 1 || lims.Limiters[0].Name != throttle || lims.Limiters[0].Count == nil ||
		*lims.Limiters[0].Count != 9 || lims.Limiters[0].Facts["decay_s"] != "60" || lims.Limiters[0].Recognised == "" {
		t.Fatalf("/api/limiters?kind=laravel-throttle = %+v", lims.Limiters)
	}
	for _, path := range []string{"/locks/" + url.PathEscape(lockKey), "/limiters/" + url.PathEscape(throttle)} {
		if st, _, body := e.do("GET", path, nil, nil); st != 200 || !strings.Contains(string(body), "Recognised") {
			t.Errorf("GET %s: %d, recognised shown: %v", path, st, strings.Contains(string(body), "Recognised"))
		}
	}
	e.sendJSON("POST", "/api/limiters/"+url.PathEscape(throttle)+"/reset", `{}`, 200, nil)
	if e.rdb.Exists(ctx, throttle).Val() != 0 {
		t.Error("the throttle survived its reset")
	}
}

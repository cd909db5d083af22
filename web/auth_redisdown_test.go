package web

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store/redistest"
)

// With Redis down a Bearer token is still checked: Prometheus keeps
// scraping /metrics and sees lockwarden_redis_up 0, a wrong token is 401
// (not 503), and guessing is still slowed, by this replica's own count.
func TestAuthBearerWhileRedisDown(t *testing.T) {
	// Its own server and mostly waiting: it runs beside the others.
	t.Parallel()
	rs := redistest.StartT(t)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr, DialTimeout: 300 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	e := newEnvOn(t, rdb, func(c *Config) { withTokens(c); fastTicks(c) })
	if st, _, b := e.do("GET", "/metrics", nil, bearerOf(viewerTok)); st != 200 {
		t.Fatalf("scrape with Redis up: %d %s", st, b)
	}

	rs.Pause()
	t.Cleanup(func() { _ = rs.Resume() })
	eventually(t, 10*time.Second, "a scrape with Redis down that says so", func() bool {
		st, _, b := e.do("GET", "/metrics", nil, bearerOf(viewerTok))
		return st == 200 && strings.Contains(string(b), "lockwarden_redis_up 0")
	})
	st, _, _ := e.do("GET", "/metrics", nil, bearerOf("wrong-token-0123456789"))
	if st != 401 {
		t.Errorf("wrong token with Redis down: %d, want 401", st)
	}
	limited := false
	for range 20 {
		st, h, _ := e.do("GET", "/api/locks", nil, bearerOf("wrong-token-0123456789"))
		if st == 429 && h.Get("Retry-After") != "" {
			limited = true
			break
		}
	}
	if !limited {
		t.Error("20 wrong tokens with Redis down were never answered 429 with Retry-After")
	}
}

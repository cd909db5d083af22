package web

import (
	"sync/atomic"

	"github.com/labstack/echo/v4"

	"github.com/lockwarden/lockwarden/web/metrics"
)

// requestCounts are the web layer's own numbers for /metrics.
type requestCounts struct {
	redisErrors atomic.Int64    // requests that failed because Redis did not answer
	byClass     [6]atomic.Int64 // by status class: 1xx..5xx at index 1..5
}

func (r *requestCounts) count(status int) {
	if c := status / 100; c >= 1 && c <= 5 {
		r.byClass[c].Add(1)
	}
}

// counts gathers, at scrape time, what the parts that are not live or
// alert count: the feed, the event log and its relay, admin's audit
// writes, the sign-in throttle, the webhook and the requests.
func (s *Server) counts() metrics.Counts {
	fc := s.feed.Counts()
	c := metrics.Counts{WSClients: fc.Clients, WSDropped: fc.Dropped, WSRejected: fc.Rejected, Broadcasts: fc.Broadcasts,
		Events: s.events.Count(), AuditErrors: s.admin.AuditErrors(), AuditSuppressed: s.failThrottle.Suppressed(),
		RedisErrors: s.requests.redisErrors.Load() + s.relay.RedisErrors()}
	c.WebhookSent, c.WebhookFailed, c.WebhookDropped = s.webhook.Counts()
	for i := range c.Requests {
		c.Requests[i] = s.requests.byClass[i].Load()
	}
	return c
}

func (s *Server) handleMetrics(c echo.Context) error {
	s.metrics.Handler().ServeHTTP(c.Response(), c.Request())
	return nil
}

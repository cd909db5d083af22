package web

import (
	"sync/atomic"

	"github.com/labstack/echo/v4"

	"github.com/lockwarden/lockwarden/web/metrics"
)

// requestCounts are the web layer's own numbers for /metrics.
type requestCounts struct {
	redisErrors atomic.Int64    // requests that failed because Redis did not answer
	wsRejected  atomic.Int64    // websocket upgrades refused at a cap
	byClass     [6]atomic.Int64 // by status class: 1xx..5xx at index 1..5
}

func (r *requestCounts) count(status int) {
	if c := status / 100; c >= 1 && c <= 5 {
		r.byClass[c].Add(1)
	}
}

// counts gathers, at scrape time, what the parts that are not live or
// alert count: the feed, the event log and its relay, admin's audit
// trails, auth's failure counts, the webhook and the requests.
func (s *Server) counts() metrics.Counts {
	fc := s.feed.Counts()
	c := metrics.Counts{WSClients: fc.Clients, WSDropped: fc.Dropped, Broadcasts: fc.Broadcasts,
		Events: s.events.Count(), AuditErrors: s.admin.AuditErrors(),
		RedisErrors: s.requests.redisErrors.Load() + s.relay.RedisErrors(), WSRejected: s.requests.wsRejected.Load()}
	if l := s.admin.RefusedLog(); l != nil {
		written, held := l.Counts()
		c.AuditRefused, c.AuditSuppressed = int64(written), int64(held)
	}
	af := s.auth.Failures().Counts()
	c.AuthFailuresSignIn, c.AuthFailuresBearer, c.AuthLimited = int64(af.SignIn), int64(af.Bearer), int64(af.Limited)
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

package web

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
)

// metrics are the console's own counters, exposed in the Prometheus text
// format. Written with atomics from hot paths; read only by /metrics.
type metrics struct {
	wsClients       atomic.Int64
	wsDropped       atomic.Int64
	broadcasts      atomic.Int64
	ticks           atomic.Int64
	tickErrors      atomic.Int64
	lastTickNanos   atomic.Int64
	tickNanosSum    atomic.Int64
	redisErrors     atomic.Int64 // failed Redis calls: sampler ticks, subscriptions, requests
	wsRejected      atomic.Int64 // upgrades refused at the client cap
	auditErrors     atomic.Int64
	auditSuppressed atomic.Int64
	requests        [6]atomic.Int64 // by status class: 1xx..5xx at index 1..5
}

func (m *metrics) countRequest(status int) {
	if c := status / 100; c >= 1 && c <= 5 {
		m.requests[c].Add(1)
	}
}

// handleMetrics writes the Prometheus text exposition format by hand: a
// dozen series do not justify a client library.
func (s *Server) handleMetrics(c echo.Context) error {
	var b bytes.Buffer
	m := s.metrics
	gauge := func(name, help string, v any) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n%s %v\n", name, help, name, name, v)
	}
	counterF := func(name, help string, v string) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s counter\n%s %s\n", name, help, name, name, v)
	}
	counter := func(name, help string, v int64) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", name, help, name, name, v)
	}
	gauge("lockwarden_ws_clients", "Connected websocket viewers.", m.wsClients.Load())
	counter("lockwarden_ws_dropped_total", "Websocket viewers dropped for falling behind.", m.wsDropped.Load())
	counter("lockwarden_hub_broadcasts_total", "Frames handed to the hub for every viewer.", m.broadcasts.Load())
	counter("lockwarden_sampler_ticks_total", "Sampler ticks run.", m.ticks.Load())
	counter("lockwarden_sampler_errors_total", "Sampler ticks that failed to read Redis.", m.tickErrors.Load())
	gauge("lockwarden_sampler_tick_seconds", "Duration of the last sampler tick.",
		seconds(m.lastTickNanos.Load()))
	counterF("lockwarden_sampler_tick_seconds_total", "Time spent in sampler ticks; divide by ticks for the mean.",
		seconds(m.tickNanosSum.Load()))
	counter("lockwarden_redis_errors_total", "Redis calls that failed or timed out (sampler, subscription, requests).", m.redisErrors.Load())
	counter("lockwarden_ws_rejected_total", "Websocket upgrades refused at the viewer cap.", m.wsRejected.Load())
	counter("lockwarden_audit_errors_total", "Audit records that could not be written.", m.auditErrors.Load())
	counter("lockwarden_audit_suppressed_total", "Failed sign-ins not audited because of a flood of them.", m.auditSuppressed.Load())
	counter("lockwarden_events_total", "Lock events received or emitted.", s.events.count())

	b.WriteString("# HELP lockwarden_http_requests_total HTTP requests served, by status class.\n")
	b.WriteString("# TYPE lockwarden_http_requests_total counter\n")
	for i := 1; i <= 5; i++ {
		fmt.Fprintf(&b, "lockwarden_http_requests_total{code=\"%dxx\"} %d\n", i, m.requests[i].Load())
	}

	sn := s.sampler.latest()
	up := 0
	if sn != nil && sn.RedisUp {
		up = 1
	}
	gauge("lockwarden_redis_up", "1 when the last sampler tick reached Redis.", up)
	if sn != nil {
		gauge("lockwarden_locks", "Locks seen by the last tick.", len(sn.Locks))
		gauge("lockwarden_limiters", "Limiters seen by the last tick.", len(sn.Limiters))
		b.WriteString("# HELP lockwarden_limiter_window Outcomes of acquires over the last 1 s window.\n")
		b.WriteString("# TYPE lockwarden_limiter_window gauge\n")
		for _, l := range sn.Limiters {
			w := sn.window(l.Name)
			name := promLabel(l.Name)
			fmt.Fprintf(&b, "lockwarden_limiter_window{name=\"%s\",outcome=\"acquired\"} %d\n", name, w.Acquired)
			fmt.Fprintf(&b, "lockwarden_limiter_window{name=\"%s\",outcome=\"rejected\"} %d\n", name, w.Rejected)
			fmt.Fprintf(&b, "lockwarden_limiter_window{name=\"%s\",outcome=\"errors\"} %d\n", name, w.Errors)
		}
	}
	return c.Blob(http.StatusOK, "text/plain; version=0.0.4; charset=utf-8", b.Bytes())
}

func seconds(nanos int64) string {
	return strconv.FormatFloat(time.Duration(nanos).Seconds(), 'g', -1, 64)
}

// promEscaper escapes a label value: names come from Redis and may hold
// quotes, backslashes or newlines.
var promEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// promLabel makes a Redis name a valid label value (UTF-8, escaped).
func promLabel(v string) string { return promEscaper.Replace(strings.ToValidUTF8(v, "\uFFFD")) }

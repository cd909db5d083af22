package web

import (
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the console's own counters. Written with atomics from hot
// paths; read by the collector on every scrape.
type metrics struct {
	wsClients  atomic.Int64
	wsDropped  atomic.Int64
	broadcasts atomic.Int64
	ticks      atomic.Int64
	tickErrors atomic.Int64
	// lastTickNanos is written by the sampler once per tick with the
	// tick's duration; it feeds the tick histogram as it stores.
	lastTickNanos tickObserver
	tickNanosSum  atomic.Int64    // kept for the sampler; the histogram's _sum exports it
	redisErrors   atomic.Int64    // failed Redis calls: sampler ticks, subscriptions, requests
	wsRejected    atomic.Int64    // upgrades refused at the client cap
	requests      [6]atomic.Int64 // by status class: 1xx..5xx at index 1..5
}

func (m *metrics) countRequest(status int) {
	if c := status / 100; c >= 1 && c <= 5 {
		m.requests[c].Add(1)
	}
}

// tickObserver keeps the last tick's duration and observes every one into
// the histogram, so the sampler records a tick with a single call.
type tickObserver struct {
	last atomic.Int64
	hist prometheus.Histogram // set by New before the sampler runs; nil in unit tests
}

func (o *tickObserver) Store(nanos int64) {
	o.last.Store(nanos)
	if o.hist != nil {
		o.hist.Observe(time.Duration(nanos).Seconds())
	}
}

func (o *tickObserver) Load() int64 { return o.last.Load() }

// tickBuckets span a fast local tick (a few ms) to one that hits the
// sampler's timeout (2 s and more).
var tickBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .2, .5, 1, 2.5, 5}

// newRegistry builds the /metrics registry: the console's health, the Go
// and process collectors, and the per-object series of objectCollector.
func (s *Server) newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	hist := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "lockwarden_sampler_tick_seconds",
		Help:    "Duration of sampler ticks.",
		Buckets: tickBuckets,
	})
	s.metrics.lastTickNanos.hist = hist
	reg.MustRegister(hist,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&consoleCollector{s: s},
		&objectCollector{s: s},
		&nodeCollector{s: s},
		&discoveryCollector{s: s},
	)
	return reg
}

func (s *Server) handleMetrics(c echo.Context) error {
	s.metricsHandler.ServeHTTP(c.Response(), c.Request())
	return nil
}

// newMetricsHandler serves reg in the text format (or OpenMetrics or
// protobuf when the scraper asks for them).
func newMetricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

// consoleCollector exports the console's counters and gauges at scrape time.
type consoleCollector struct{ s *Server }

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	descWSClients       = desc("lockwarden_ws_clients", "Connected websocket viewers.")
	descWSDropped       = desc("lockwarden_ws_dropped_total", "Websocket viewers dropped for falling behind.")
	descWSRejected      = desc("lockwarden_ws_rejected_total", "Websocket upgrades refused at the viewer cap.")
	descBroadcasts      = desc("lockwarden_hub_broadcasts_total", "Frames handed to the hub for every viewer.")
	descTicks           = desc("lockwarden_sampler_ticks_total", "Sampler ticks run.")
	descTickErrors      = desc("lockwarden_sampler_errors_total", "Sampler ticks that failed to read Redis.")
	descRedisErrors     = desc("lockwarden_redis_errors_total", "Redis calls that failed or timed out (sampler, subscription, requests).")
	descAuditErrors     = desc("lockwarden_audit_errors_total", "Audit records that could not be written.")
	descAuditRefused    = desc("lockwarden_audit_refused_total", "Refused requests written to the refused trail.")
	descAuditSuppressed = desc("lockwarden_audit_suppressed_total", "Refused requests held back by the per-source throttle and only summarised.")
	descAuthFailures    = desc("lockwarden_auth_failures_total", "Wrong tokens, by where they were presented.", "via")
	descAuthLimited     = desc("lockwarden_auth_limited_total", "Sign-in attempts answered 429 without a token check.")
	descEvents          = desc("lockwarden_events_total", "Lock events received or emitted.")
	descRequests        = desc("lockwarden_http_requests_total", "HTTP requests served, by status class.", "code")
	descRedisUp         = desc("lockwarden_redis_up", "1 when the last sampler tick reached Redis.")
	descLocks           = desc("lockwarden_locks", "Locks seen by the last tick.")
	descLimiters        = desc("lockwarden_limiters", "Limiters seen by the last tick.")
	descWebhookSent     = desc("lockwarden_alert_webhook_sent_total", "Alert notifications the webhook receiver accepted.")
	descWebhookFailed   = desc("lockwarden_alert_webhook_failed_total", "Alert notifications given up after retries or refused.")
	descWebhookDropped  = desc("lockwarden_alert_webhook_dropped_total", "Alert notifications dropped because the webhook queue was full.")
)

func (cc *consoleCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descWSClients, descWSDropped, descWSRejected, descBroadcasts, descTicks,
		descTickErrors, descRedisErrors, descAuditErrors, descAuditRefused, descAuditSuppressed, descAuthFailures, descAuthLimited, descEvents, descRequests,
		descRedisUp, descLocks, descLimiters, descWebhookSent, descWebhookFailed, descWebhookDropped} {
		ch <- d
	}
}

func (cc *consoleCollector) Collect(ch chan<- prometheus.Metric) {
	s, m := cc.s, cc.s.metrics
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	gauge(descWSClients, float64(m.wsClients.Load()))
	counter(descWSDropped, m.wsDropped.Load())
	counter(descWSRejected, m.wsRejected.Load())
	counter(descBroadcasts, m.broadcasts.Load())
	counter(descTicks, m.ticks.Load())
	counter(descTickErrors, m.tickErrors.Load())
	counter(descRedisErrors, m.redisErrors.Load())
	counter(descAuditErrors, s.admin.AuditErrors())
	if l := s.admin.RefusedLog(); l != nil {
		written, held := l.Counts()
		counter(descAuditRefused, int64(written))
		counter(descAuditSuppressed, int64(held))
	}
	fc := s.auth.Failures().Counts()
	counter(descAuthFailures, int64(fc.SignIn), "sign-in")
	counter(descAuthFailures, int64(fc.Bearer), "bearer")
	counter(descAuthLimited, int64(fc.Limited))
	counter(descEvents, s.events.count())
	for i := 1; i <= 5; i++ {
		counter(descRequests, m.requests[i].Load(), string(rune('0'+i))+"xx")
	}
	var sent, failed, dropped int64
	if w := s.webhook; w != nil {
		sent, failed, dropped = w.sent.Load(), w.failed.Load(), w.dropped.Load()
	}
	counter(descWebhookSent, sent)
	counter(descWebhookFailed, failed)
	counter(descWebhookDropped, dropped)

	sn := s.sampler.latest()
	up := 0.0
	if sn != nil && sn.RedisUp {
		up = 1
	}
	gauge(descRedisUp, up)
	if sn != nil {
		gauge(descLocks, float64(len(sn.Locks)))
		gauge(descLimiters, float64(len(sn.Limiters)))
	}
}

// promLabel is a Redis name as a label value: client_golang escapes, but
// refuses invalid UTF-8, which a Redis name may hold.
func promLabel(v string) string { return strings.ToValidUTF8(v, "\uFFFD") }

// Package metrics is the console's /metrics: collectors that read each
// part's state when Prometheus scrapes (live's snapshot, ticks, nodes and
// discovery; alert's firing set; the counts the web layer gathers from the
// feed, the event log, admin and its own requests), and the limiters'
// monotonic counters, kept by observing live's snapshots. Nothing writes
// into Prometheus between scrapes.
//
// It imports store/inspect, web/live and web/alert.
package metrics

import (
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lockwarden/lockwarden/web/alert"
	"github.com/lockwarden/lockwarden/web/live"
)

// Counts are the console's own numbers, read at every scrape.
type Counts struct {
	WSClients, WSDropped, WSRejected, Broadcasts int64 // the feed's
	Events                                       int64 // lock events received or emitted
	AuditErrors                                  int64
	// Refused requests written to the refused trail, and those the
	// per-source throttle held back and only summarised.
	AuditRefused, AuditSuppressed int64
	// Wrong tokens by where they were presented; sign-ins answered 429.
	AuthFailuresSignIn, AuthFailuresBearer, AuthLimited int64
	// RedisErrors are failed Redis calls outside live's (requests, the
	// event subscription); live's are added to them.
	RedisErrors int64
	Requests    [6]int64 // by status class: 1xx..5xx at index 1..5
	// Webhook posts: accepted, given up, dropped at a full queue.
	WebhookSent, WebhookFailed, WebhookDropped int64
}

// Config is what the collectors read.
type Config struct {
	Live   *live.Sampler
	Alerts *alert.Engine
	Counts func() Counts
	// Match, a glob, limits which objects get per-object series; Top caps
	// them per family, busiest first (DefaultTop when 0; negative for none).
	Match string
	Top   int
}

// Metrics serves /metrics and keeps the limiters' counters.
type Metrics struct {
	cfg     Config
	objects *objectCounters
	handler http.Handler
}

// New builds the registry: the console's health, the Go and process
// collectors, and the per-object series.
func New(cfg Config) *Metrics {
	switch {
	case cfg.Top == 0:
		cfg.Top = DefaultTop
	case cfg.Top < 0:
		cfg.Top = 0
	}
	m := &Metrics{cfg: cfg, objects: newObjectCounters()}
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&consoleCollector{m},
		&objectCollector{m},
		&nodeCollector{m},
		&discoveryCollector{m},
	)
	// The text format, or OpenMetrics or protobuf when the scraper asks.
	m.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	return m
}

// Handler serves the registry.
func (m *Metrics) Handler() http.Handler { return m.handler }

// Observe counts the stats buckets sn completed (see objectCounters).
func (m *Metrics) Observe(sn *live.Snapshot) { m.objects.Observe(sn) }

// consoleCollector exports the console's counters and gauges at scrape time.
type consoleCollector struct{ m *Metrics }

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	descWSClients       = desc("lockwarden_ws_clients", "Connected websocket viewers.")
	descWSDropped       = desc("lockwarden_ws_dropped_total", "Websocket viewers dropped for falling behind.")
	descWSRejected      = desc("lockwarden_ws_rejected_total", "Websocket upgrades refused at the viewer cap.")
	descBroadcasts      = desc("lockwarden_hub_broadcasts_total", "Frames handed to the hub for every viewer.")
	descTickSeconds     = desc("lockwarden_sampler_tick_seconds", "Duration of sampler ticks.")
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
	descLeaseViolations = desc("lockwarden_lease_violations_total", "Lock holds whose exclusion may have been broken (a lease that ran out while its holder worked, a late release or renewal, an eviction), by kind.", "kind")
)

func (cc *consoleCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descWSClients, descWSDropped, descWSRejected, descBroadcasts, descTickSeconds, descTicks,
		descTickErrors, descRedisErrors, descAuditErrors, descAuditRefused, descAuditSuppressed, descAuthFailures, descAuthLimited, descEvents, descRequests,
		descRedisUp, descWebhookSent, descWebhookFailed, descWebhookDropped, descLeaseViolations} {
		ch <- d
	}
}

func (cc *consoleCollector) Collect(ch chan<- prometheus.Metric) {
	m, c := cc.m, cc.m.cfg.Counts()
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	gauge(descWSClients, float64(c.WSClients))
	counter(descWSDropped, c.WSDropped)
	counter(descWSRejected, c.WSRejected)
	counter(descBroadcasts, c.Broadcasts)
	ts := m.cfg.Live.TickStats()
	ch <- prometheus.MustNewConstHistogram(descTickSeconds, uint64(ts.Ticks), ts.Sum.Seconds(), ts.Buckets)
	counter(descTicks, ts.Ticks)
	counter(descTickErrors, ts.Failed)
	counter(descRedisErrors, c.RedisErrors+ts.RedisErrors)
	counter(descAuditErrors, c.AuditErrors)
	counter(descAuditRefused, c.AuditRefused)
	counter(descAuditSuppressed, c.AuditSuppressed)
	counter(descAuthFailures, c.AuthFailuresSignIn, "sign-in")
	counter(descAuthFailures, c.AuthFailuresBearer, "bearer")
	counter(descAuthLimited, c.AuthLimited)
	counter(descEvents, c.Events)
	for i := 1; i <= 5; i++ {
		counter(descRequests, c.Requests[i], string(rune('0'+i))+"xx")
	}
	counter(descWebhookSent, c.WebhookSent)
	counter(descWebhookFailed, c.WebhookFailed)
	counter(descWebhookDropped, c.WebhookDropped)
	lease := m.cfg.Live.LeaseViolationCounts()
	for _, k := range live.ViolationKinds {
		counter(descLeaseViolations, lease[k], k)
	}

	sn := m.cfg.Live.Latest()
	up := 0.0
	if sn != nil && sn.RedisUp {
		up = 1
	}
	gauge(descRedisUp, up)
}

// promLabel is a Redis name as a label value: client_golang escapes, but
// refuses invalid UTF-8, which a Redis name may hold.
func promLabel(v string) string { return strings.ToValidUTF8(v, "\uFFFD") }

var descNodeUp = desc("lockwarden_redis_node_up", "1 when the Redis master answered the console's last probe, 0 when not.", "node")

// nodeCollector exports lockwarden_redis_node_up per master.
type nodeCollector struct{ m *Metrics }

func (c *nodeCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descNodeUp }

func (c *nodeCollector) Collect(ch chan<- prometheus.Metric) {
	for _, n := range c.m.cfg.Live.Nodes() {
		v := 0.0
		if n.Up {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(descNodeUp, prometheus.GaugeValue, v, n.Addr)
	}
}

var (
	descDiscLastPass = desc("lockwarden_discovery_last_pass_timestamp_seconds", "When the last complete discovery pass over the keyspace ended (Unix seconds; 0 before the first).")
	descDiscPassDur  = desc("lockwarden_discovery_pass_duration_seconds", "How long the last complete discovery pass took.")
	descDiscScanned  = desc("lockwarden_discovery_keys_scanned_total", "Keys the paced reconciliation walk asked SCAN to examine (COUNT hints, summed).")
	descDiscTarget   = desc("lockwarden_discovery_pass_target_seconds", "How long a reconciliation pass should take (--discovery-pass), or the period of full passes where the walk cannot SCAN.")
	descDiscBudget   = desc("lockwarden_discovery_budget_pass_seconds", "The shortest pass over the keyspace the discovery budget pays for at the walk's measured cost per key (0 until measured); a pass takes the longer of this and the target.")
	descDiscCost     = desc("lockwarden_discovery_cost_per_key_seconds", "Redis CPU the walk measured per key examined (0 until measured).")
	descDiscKeys     = desc("lockwarden_discovery_keyspace_keys", "Keys in the database at the walk's last SCAN page.")
)

// discoveryCollector exports the discovery status at scrape time.
type discoveryCollector struct{ m *Metrics }

func (d *discoveryCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descDiscLastPass
	ch <- descDiscPassDur
	ch <- descDiscScanned
	ch <- descDiscTarget
	ch <- descDiscBudget
	ch <- descDiscCost
	ch <- descDiscKeys
}

func (d *discoveryCollector) Collect(ch chan<- prometheus.Metric) {
	st := d.m.cfg.Live.Status()
	var last float64
	if st.LastPassEnded != nil {
		last = float64(st.LastPassEnded.UnixMilli()) / 1000
	}
	ch <- prometheus.MustNewConstMetric(descDiscLastPass, prometheus.GaugeValue, last)
	ch <- prometheus.MustNewConstMetric(descDiscPassDur, prometheus.GaugeValue, st.LastPassSeconds)
	ch <- prometheus.MustNewConstMetric(descDiscScanned, prometheus.CounterValue, float64(st.KeysScanned))
	ch <- prometheus.MustNewConstMetric(descDiscTarget, prometheus.GaugeValue, st.PassTargetSeconds)
	ch <- prometheus.MustNewConstMetric(descDiscBudget, prometheus.GaugeValue, st.BudgetPassSeconds)
	ch <- prometheus.MustNewConstMetric(descDiscCost, prometheus.GaugeValue, st.CostPerKeyUsec/1e6)
	ch <- prometheus.MustNewConstMetric(descDiscKeys, prometheus.GaugeValue, float64(st.Keyspace))
}

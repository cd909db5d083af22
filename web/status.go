package web

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockwarden/lockwarden/views"
)

// Discovery status (live.DiscoveryStatus) on /status, /api/status and
// /metrics.

func (s *Server) handleAPIStatus(c echo.Context) error {
	return c.JSON(http.StatusOK, s.live.Status())
}

func (s *Server) handleStatusPage(c echo.Context) error {
	st := s.live.Status()
	m := views.StatusPage{
		Layout:            s.layout(c, "Status", ""),
		KeyspaceEvents:    st.KeyspaceEvents,
		Scanning:          st.Scanning,
		PassTarget:        time.Duration(st.PassTargetSeconds * float64(time.Second)),
		Budget:            st.Budget,
		Passes:            st.Passes,
		LastPassSeconds:   st.LastPassSeconds,
		KeysScanned:       st.KeysScanned,
		PageCount:         st.PageCount,
		CostPerKeyUsec:    st.CostPerKeyUsec,
		Keyspace:          st.Keyspace,
		BudgetPass:        time.Duration(st.BudgetPassSeconds * float64(time.Second)),
		Announced:         st.Announced,
		Notified:          st.Notified,
		IdleSkipped:       st.IdleSkipped,
		SamplingShare:     st.SamplingShare,
		RejectsRemembered: st.RejectsRemembered,
		RejectsSkipped:    st.RejectsSkipped,
		Locks:             st.Locks,
		Limiters:          st.Limiters,
	}
	if st.LastPassEnded != nil {
		m.LastPassEnded = *st.LastPassEnded
	}
	for i := len(st.Recent) - 1; i >= 0; i-- {
		r := st.Recent[i]
		m.Recent = append(m.Recent, views.FoundRow{Name: r.Name, Kind: r.Kind, Source: r.Source, At: r.At})
	}
	return s.render(c, http.StatusOK, views.Status(m))
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
type discoveryCollector struct{ s *Server }

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
	st := d.s.live.Status()
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

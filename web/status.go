package web

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/lockwarden/lockwarden/views"
	"github.com/lockwarden/lockwarden/web/history"
	"github.com/lockwarden/lockwarden/web/live"
)

// Discovery status (live.DiscoveryStatus) on /status, /api/status and
// /metrics, and the history's memory and writer state on the first two.

// statusJSON is GET /api/status: discovery's fields, and "history" (null
// when the console keeps none).
type statusJSON struct {
	*live.DiscoveryStatus
	History *history.Stats `json:"history"`
}

func (s *Server) historyStats() *history.Stats {
	if h := s.hist.History(); h != nil {
		st := h.Stats()
		// Both are snapshots the history never took: the ones its feed
		// skipped while it was busy turning an older one into a sample
		// (live.Detached), and the samples its writer was too busy for.
		st.Dropped += s.histObs.Skipped()
		return &st
	}
	return nil
}

func (s *Server) handleAPIStatus(c echo.Context) error {
	return c.JSON(http.StatusOK, statusJSON{DiscoveryStatus: s.live.Status(), History: s.historyStats()})
}

// historyStatus is the status page's history section.
func historyStatus(st *history.Stats) *views.HistoryStatus {
	if st == nil {
		return nil
	}
	return &views.HistoryStatus{Writer: st.Writer, ID: st.ID, Keys: st.Keys, Bytes: st.BytesEstimate,
		LimitersKept: st.LimitersKept, LimitersOmitted: st.LimitersOmitted, LocksKept: st.LocksKept,
		LocksOmitted: st.LocksOmitted, LastFlush: st.LastFlush, LastError: st.LastError, Dropped: st.Dropped}
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
		History:           historyStatus(s.historyStats()),
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

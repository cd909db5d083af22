package web

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

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

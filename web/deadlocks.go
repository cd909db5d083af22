package web

import (
	"net/http"
	"slices"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/views"
	"github.com/lockwarden/lockwarden/web/alert"
	"github.com/lockwarden/lockwarden/web/live"
)

// Exclusion broken or stuck: live finds the cycles of the wait-for graph
// every tick (web/live/deadlocks.go) and the holds whose lease ran out
// while their holders worked (web/live/leases.go); the API and the pages
// show them with each holder's identity from the client registry.

type deadlockJSON struct {
	Since time.Time              `json:"since"`
	Cycle []inspect.DeadlockStep `json:"cycle"`
}

// deadlocks are the snapshot's cycles (those lock is part of, unless ""),
// with identities.
func deadlocks(sn *live.Snapshot, lock string) []deadlockJSON {
	out := []deadlockJSON{}
	if sn == nil {
		return out
	}
	ds := sn.Deadlocks
	if lock != "" {
		ds = sn.DeadlocksOf(lock)
	}
	for _, d := range ds {
		inspect.AnnotateDeadlock(sn.Registry, &d.Deadlock)
		out = append(out, deadlockJSON{Since: d.Since, Cycle: d.Cycle})
	}
	return out
}

// handleAPIDeadlocks is {"deadlocks": [{"since", "cycle": [{"lock",
// "holder", "client", "waits_for", ...}]}]}; each step's waits_for is the
// next step's lock.
func (s *Server) handleAPIDeadlocks(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{"deadlocks": deadlocks(s.live.Latest(), "")})
}

// deadlockViews are the snapshot's cycles (those lock is part of, unless
// "") as the pages show them.
func deadlockViews(sn *live.Snapshot, lock string) []views.DeadlockView {
	var out []views.DeadlockView
	now := time.Now()
	for _, d := range deadlocks(sn, lock) {
		v := views.DeadlockView{Since: d.Since}
		for _, st := range d.Cycle {
			var held int64
			if st.AcquiredMS > 0 {
				held = max(0, now.UnixMilli()-st.AcquiredMS)
			}
			v.Steps = append(v.Steps, views.DeadlockStepView{Lock: st.Lock, Holder: st.Holder, Who: st.Who,
				Short: shortHolder(st), WaitsFor: st.WaitsFor, HeldMS: held, Youngest: st.Youngest})
		}
		out = append(out, v)
	}
	return out
}

// pastDeadlockViews are the ended cycles lock was part of, newest first.
func (s *Server) pastDeadlockViews(lock string) []views.PastDeadlockView {
	var out []views.PastDeadlockView
	reg := s.live.Latest().Registry
	for _, d := range s.live.EndedDeadlocksOf(lock) {
		d.Cycle = slices.Clone(d.Cycle) // the sampler's memory is shared
		inspect.AnnotateDeadlock(reg, &d.Deadlock)
		v := views.PastDeadlockView{Since: d.Since, Ended: d.Ended}
		for _, st := range d.Cycle {
			v.Steps = append(v.Steps, views.DeadlockStepView{Lock: st.Lock, Holder: st.Holder, Who: st.Who,
				Short: shortHolder(st), WaitsFor: st.WaitsFor})
		}
		out = append(out, v)
	}
	return out
}

func (s *Server) handleDeadlocksPage(c echo.Context) error {
	return s.render(c, http.StatusOK, views.Deadlocks(views.DeadlocksPage{
		Layout:    s.layout(c, "Deadlocks", views.NavDeadlocks),
		Deadlocks: deadlockViews(s.live.Latest(), ""),
	}))
}

// shortHolder names a step's holder in a few words: its application and
// owner ("inventory-svc · reserve-1"), or the owner of an unregistered
// client.
func shortHolder(st inspect.DeadlockStep) string {
	owner := st.Holder
	if id := inspect.ClientIDOf(st.Holder); id != "" {
		owner = st.Holder[len(id)+1:]
	}
	if st.Client == nil {
		return owner
	}
	return st.Client.App + " · " + owner
}

// deadlockRoutes adds the deadlocks page and its API.
func (s *Server) deadlockRoutes(e *echo.Echo) {
	e.GET("/deadlocks", s.handleDeadlocksPage)
	e.GET("/api/deadlocks", s.handleAPIDeadlocks)
	e.GET("/api/lease-violations", s.handleAPILeaseViolations)
}

// leaseViolations are the snapshot's violations of lock ("": all),
// oldest first; never nil.
func leaseViolations(sn *live.Snapshot, lock string) []live.LeaseViolation {
	out := []live.LeaseViolation{}
	if sn == nil {
		return out
	}
	for _, v := range sn.Violations {
		if lock == "" || v.Lock == lock {
			out = append(out, v)
		}
	}
	return out
}

// violationRows are lock's violations as its page says them.
func violationRows(sn *live.Snapshot, lock string) []views.LeaseViolationRow {
	var out []views.LeaseViolationRow
	for _, v := range leaseViolations(sn, lock) {
		out = append(out, views.LeaseViolationRow{Kind: v.Kind, At: v.At, Message: alert.LeaseMessage(sn.Registry, v), Probable: v.Probable})
	}
	return out
}

// handleAPILeaseViolations is {"violations": [...]}, oldest first;
// ?lock= keeps one lock's.
func (s *Server) handleAPILeaseViolations(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{"violations": leaseViolations(s.live.Latest(), c.QueryParam("lock"))})
}

package web

import (
	"net/http"
	"net/url"
	"slices"
	"sort"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/views"
	"github.com/lockwarden/lockwarden/web/admin"
	"github.com/lockwarden/lockwarden/web/live"
)

// The clients screen: every store client the registry knows or a holder
// names, what it holds and waits for, and release-all for a crashed one.
// Who holds a lock and since when comes from live, which reads the
// registry and remembers when it first saw each holder; annotated joins
// both with the locks a page shows.

// annotated returns l with its holders' and waiters' identities, hold and
// wait times (copies of both slices: l may be the snapshot's).
func (s *Server) annotated(l inspect.LockInfo) inspect.LockInfo {
	sn := s.live.Latest()
	var reg *inspect.Registry
	if sn != nil {
		reg = sn.Registry
	}
	now := time.Now()
	l.Holders = slices.Clone(l.Holders)
	for i := range l.Holders {
		var seen time.Time
		if sn != nil {
			seen = sn.HolderSeen[live.HolderKey(l.Name, l.Holders[i].ID)]
		}
		inspect.AnnotateHolder(reg, &l.Holders[i], seen, now)
	}
	l.Waiters = slices.Clone(l.Waiters)
	for i := range l.Waiters {
		inspect.AnnotateWaiter(reg, &l.Waiters[i], now)
	}
	return l
}

type clientJSON struct {
	ID string `json:"id"`
	// Registered is false for ids seen only in holder fields (Redisson
	// and other clients that do not register).
	Registered     bool           `json:"registered"`
	App            string         `json:"app,omitempty"`
	Host           string         `json:"host,omitempty"`
	PID            int            `json:"pid,omitempty"`
	Version        string         `json:"version,omitempty"`
	HeartbeatAgeMS *int64         `json:"heartbeat_age_ms,omitempty"`
	Gone           bool           `json:"gone,omitempty"`
	Holds          []inspect.Hold `json:"holds"`
}

// clientList is every client id seen holding or waiting in the latest
// snapshot, with registered clients that hold nothing after them.
func clientList(sn *live.Snapshot) []clientJSON {
	if sn == nil {
		return []clientJSON{}
	}
	holds := inspect.ClientHolds(sn.Locks)
	ids := make(map[string]bool, len(holds))
	for id := range holds {
		ids[id] = true
	}
	if sn.Registry != nil {
		for id := range sn.Registry.Clients {
			ids[id] = true
		}
	}
	out := make([]clientJSON, 0, len(ids))
	for id := range ids {
		c := clientJSON{ID: id, Holds: holds[id]}
		if c.Holds == nil {
			c.Holds = []inspect.Hold{}
		}
		if sn.Registry != nil {
			if ci, ok := sn.Registry.Clients[id]; ok {
				age := ci.HeartbeatAgeMS
				c.Registered, c.App, c.Host, c.PID, c.Version, c.HeartbeatAgeMS, c.Gone =
					true, ci.App, ci.Host, ci.PID, ci.Version, &age, ci.Gone()
			}
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if (len(out[i].Holds) > 0) != (len(out[j].Holds) > 0) {
			return len(out[i].Holds) > 0
		}
		if out[i].App != out[j].App {
			return out[i].App < out[j].App
		}
		return out[i].ID < out[j].ID
	})
	return out
}

func (s *Server) handleAPIClients(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{"clients": clientList(s.live.Latest())})
}

// clientIDParam is the :id of the route, unescaped (admin checks it is a
// client UUID).
func clientIDParam(c echo.Context) (string, error) {
	id, err := url.PathUnescape(c.Param("id"))
	if err != nil {
		return "", inspect.Invalid("id", "the client id must be a UUID (36 characters, 8-4-4-4-12 hex digits)")
	}
	return id, nil
}

// releaseAll runs admin's release-all for this request.
func (s *Server) releaseAll(c echo.Context, id, reason string) ([]admin.Released, error) {
	out, err := s.admin.ReleaseAll(c.Request().Context(), s.actor(c), admin.ReleaseAll{Client: id, Reason: reason})
	recorded(c)
	return out, err
}

func (s *Server) handleAPIReleaseAll(c echo.Context) error {
	id, err := clientIDParam(c)
	if err != nil {
		return err
	}
	var body struct {
		Reason string `json:"reason"`
	}
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	out, err := s.releaseAll(c, id, body.Reason)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"client": id, "released": out})
}

// clientRows turns the client list into the page's rows.
func clientRows(list []clientJSON) []views.ClientIdentityRow {
	rows := make([]views.ClientIdentityRow, 0, len(list))
	for _, c := range list {
		r := views.ClientIdentityRow{ID: c.ID, Registered: c.Registered, App: c.App, Host: c.Host, PID: c.PID,
			Version: c.Version, Gone: c.Gone, HeartbeatAgeMS: -1}
		if c.HeartbeatAgeMS != nil {
			r.HeartbeatAgeMS = *c.HeartbeatAgeMS
		}
		for _, h := range c.Holds {
			r.Holds = append(r.Holds, views.HoldRow{Lock: h.Lock, Kind: string(h.Kind), Holder: h.Holder,
				What: h.What, Count: h.Count, Place: h.Place})
		}
		rows = append(rows, r)
	}
	return rows
}

func (s *Server) handleClientsPage(c echo.Context) error {
	return s.render(c, http.StatusOK, views.Clients(views.ClientsPage{
		Layout:  s.layout(c, "Clients", views.NavClients),
		Clients: clientRows(clientList(s.live.Latest())),
	}))
}

// handleReleaseAllForm is the Clients page's release-all button.
func (s *Server) handleReleaseAllForm(c echo.Context) error {
	id, err := clientIDParam(c)
	if err != nil {
		return err
	}
	out, err := s.releaseAll(c, id, c.FormValue(views.FieldReason))
	if err != nil {
		return err
	}
	page := views.ClientsPage{Layout: s.layout(c, "Clients", views.NavClients),
		Clients: clientRows(clientList(s.live.Latest())), ReleasedFor: id}
	for _, r := range out {
		page.Released = append(page.Released, views.ReleasedRow{Lock: r.Lock, Holder: r.Holder, Released: r.Released, Error: r.Error})
	}
	return s.render(c, http.StatusOK, views.Clients(page))
}

// clientRoutes adds the clients page, its API and release-all.
func (s *Server) clientRoutes(e *echo.Echo) {
	e.GET("/clients", s.handleClientsPage)
	s.mutation(e.POST, "/clients/:id/release-all", admin.ActionReleaseAll, s.handleReleaseAllForm)
	e.GET("/api/clients", s.handleAPIClients)
	s.mutation(e.POST, "/api/clients/:id/release-all", admin.ActionReleaseAll, s.handleAPIReleaseAll)
}

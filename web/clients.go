package web

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
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
	if _, _, err := s.knownClient(id); err != nil {
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

// knownClient is client id as the latest snapshot knows it: registered,
// or holding or waiting. A malformed id is a 400; an id the console does
// not know a 404, before any release: a release-all of it would release
// nothing, and say so only afterwards.
func (s *Server) knownClient(id string) (*live.Snapshot, clientJSON, error) {
	if inspect.ClientIDOf(id+":x") != id {
		return nil, clientJSON{}, inspect.Invalid("id", "the client id must be a UUID (36 characters, 8-4-4-4-12 hex digits)")
	}
	sn, err := s.snapshotFor()
	if err != nil {
		return nil, clientJSON{}, err
	}
	for _, c := range clientList(sn) {
		if c.ID == id {
			return sn, c, nil
		}
	}
	return nil, clientJSON{}, inspect.Errorf(inspect.CodeNotFound,
		"no client %s is registered or holds or waits for a lock the console sees", id)
}

// handleReleaseAllConfirm says what releasing a client's holds will do,
// lock by lock, naming the client by application, host and pid and
// warning when it is alive.
func (s *Server) handleReleaseAllConfirm(c echo.Context) error {
	id, err := clientIDParam(c)
	if err != nil {
		return err
	}
	return s.renderReleaseAll(c, http.StatusOK, id, "", "")
}

// renderReleaseAll renders the confirmation of id's release-all.
func (s *Server) renderReleaseAll(c echo.Context, status int, id, reason, reasonErr string) error {
	sn, cl, err := s.knownClient(id)
	if err != nil {
		return err
	}
	page := views.ReleaseAllConfirmPage{Client: clientRows([]clientJSON{cl})[0], Reason: reason, ReasonError: reasonErr}
	page.Layout = s.layout(c, "Release everything "+clientWords(cl)+" holds", views.NavClients)
	for _, h := range cl.Holds {
		st := views.ReleaseStep{Lock: h.Lock, Kind: string(h.Kind), What: holdWords(h)}
		switch i := slices.IndexFunc(sn.Locks, func(l inspect.LockInfo) bool { return l.Name == h.Lock }); {
		case h.What == "waits" || h.What == "queued":
			st.Does = "its place is dropped from the queue, so the lock goes to the next in line"
		case i >= 0:
			st.Does = sn.Locks[i].ForceUnlockPlan(h.Holder).Summary
		default:
			st.Does = "the lock is force-unlocked, holder-checked"
		}
		page.Steps = append(page.Steps, st)
	}
	return s.render(c, status, views.ReleaseAllConfirm(page))
}

// clientWords names a client by application, host and pid (its id when
// it does not register).
func clientWords(c clientJSON) string {
	if !c.Registered {
		return "unregistered client " + c.ID
	}
	return fmt.Sprintf("%s on %s (pid %d)", c.App, c.Host, c.PID)
}

// holdWords says what a client does on a lock, by the owner (thread,
// task) of the client that holds or waits: the page names the client.
func holdWords(h inspect.Hold) string {
	who := h.Holder
	if inspect.ClientIDOf(h.Holder) != "" {
		who = "owner " + strings.TrimSuffix(h.Holder[37:], ":write")
	}
	switch h.What {
	case "waits":
		return fmt.Sprintf("waits in the fair queue, place %d", h.Place)
	case "queued":
		return fmt.Sprintf("waits in store's queue, place %d (%s)", h.Place, who)
	case "read", "write":
		return fmt.Sprintf("holds the %s lock, %d level(s) (%s)", h.What, h.Count, who)
	}
	return fmt.Sprintf("holds it ×%d (%s)", h.Count, who)
}

// handleReleaseAllForm is the confirmation's button: it releases, then
// goes back to the Clients page (post/redirect/get) with what it did in
// the banner; each hold's outcome is in the audit trail.
func (s *Server) handleReleaseAllForm(c echo.Context) error {
	id, err := clientIDParam(c)
	if err != nil {
		return err
	}
	_, cl, err := s.knownClient(id)
	if err != nil {
		return err
	}
	reason := c.FormValue(views.FieldReason)
	if _, rerr := admin.CheckReason(reason); rerr != nil {
		msg := rerr.Error()
		slotOf(c).detail = msg
		return s.renderReleaseAll(c, http.StatusBadRequest, id, clipText(reason, views.MaxReasonLen), msg)
	}
	out, err := s.releaseAll(c, id, reason)
	if err != nil {
		return err
	}
	released := 0
	for _, r := range out {
		if r.Released {
			released++
		}
	}
	what := fmt.Sprintf("%s: %d of %d", clientWords(cl), released, len(out))
	return c.Redirect(http.StatusSeeOther, "/clients?"+s.flashQuery(c, "released-all", what).Encode())
}

// clientRoutes adds the clients page, its API and release-all.
func (s *Server) clientRoutes(e *echo.Echo) {
	e.GET("/clients", s.handleClientsPage)
	e.GET("/clients/:id/release-all", s.handleReleaseAllConfirm)
	s.mutation(e.POST, "/clients/:id/release-all", admin.ActionReleaseAll, s.handleReleaseAllForm)
	e.GET("/api/clients", s.handleAPIClients)
	s.mutation(e.POST, "/api/clients/:id/release-all", admin.ActionReleaseAll, s.handleAPIReleaseAll)
}

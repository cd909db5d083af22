package web

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/views"
)

// Who holds a lock and since when: the sampler reads the client registry at
// most once a second (registryEvery) and remembers when it first saw each
// holder; pages and the API join both with the locks they show. Nothing
// here reads Redis per page load except release-all, which must.

// registryEvery bounds the sampler's registry reads.
const registryEvery = time.Second

// askRegistry has the tick's pipeline read the registry when the last
// read is a second old (Walker.ReadClients): identities cost no round trip
// of their own, and the tick stays one pipeline per node.
func (sm *sampler) askRegistry(now time.Time) {
	if !sm.registryRead.IsZero() && now.Sub(sm.registryRead) < registryEvery {
		return
	}
	sm.registryRead = now
	sm.walker.ReadClients()
}

// takeRegistry keeps the registry the tick read. A tick that did not read
// it, or failed to, keeps the previous one: who a client is does not change.
func (sm *sampler) takeRegistry(smp *inspect.Sample) {
	if smp.Registry != nil {
		sm.registry = smp.Registry
	}
}

// holderKey names one holder of one lock in snapshot.HolderSeen.
func holderKey(lock, holder string) string { return lock + "\x00" + holder }

// seeHolders returns the first-sight times of the holders in locks,
// carrying over those already seen; holders gone are forgotten, so a
// holder that returns starts over. The map is new each tick (snapshots
// are never modified after publishing).
func (sm *sampler) seeHolders(locks []inspect.LockInfo, now time.Time) map[string]time.Time {
	next := make(map[string]time.Time, len(locks))
	for _, l := range locks {
		for _, h := range l.Holders {
			k := holderKey(l.Name, h.ID)
			if t, ok := sm.holderSeen[k]; ok {
				next[k] = t
			} else {
				next[k] = now
			}
		}
	}
	sm.holderSeen = next
	return next
}

// annotated returns l with its holders' identities and hold times (a copy
// of the holder slice: l may be the snapshot's).
func (s *Server) annotated(l inspect.LockInfo) inspect.LockInfo {
	sn := s.sampler.latest()
	var reg *inspect.Registry
	if sn != nil {
		reg = sn.Registry
	}
	now := time.Now()
	l.Holders = slices.Clone(l.Holders)
	for i := range l.Holders {
		var seen time.Time
		if sn != nil {
			seen = sn.HolderSeen[holderKey(l.Name, l.Holders[i].ID)]
		}
		inspect.AnnotateHolder(reg, &l.Holders[i], seen, now)
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
func clientList(sn *snapshot) []clientJSON {
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
	return c.JSON(http.StatusOK, map[string]any{"clients": clientList(s.sampler.latest())})
}

// clientIDParam is the :id of the route, checked to be a client UUID.
func clientIDParam(c echo.Context) (string, error) {
	id, err := url.PathUnescape(c.Param("id"))
	if err != nil || inspect.ClientIDOf(id+":x") != id {
		return "", badRequest("id", "the client id must be a UUID (36 characters, 8-4-4-4-12 hex digits)")
	}
	return id, nil
}

type releasedJSON struct {
	Lock   string `json:"lock"`
	Holder string `json:"holder"`
	// Released is false when the holder let go (or lost the lock) before
	// the console got there; Error says what was found instead.
	Released bool   `json:"released"`
	Error    string `json:"error,omitempty"`
}

// releaseAll breaks every hold of client id as the latest snapshot shows
// it. Each lock is holder-checked by ForceUnlock and gets its own audit
// record; the request's own record says how many were released.
func (s *Server) releaseAll(c echo.Context, id, reason string) ([]releasedJSON, error) {
	ctx := c.Request().Context()
	rec := auditRecord(c)
	rec.Action, rec.Target, rec.Reason = "release-all", id, reason
	var holds []inspect.Hold
	if sn := s.sampler.latest(); sn != nil {
		holds = inspect.ClientHolds(sn.Locks)[id]
	}
	results, err := s.insp.ReleaseAll(ctx, id, holds)
	touchedLocks := make([]string, 0, len(results))
	for _, r := range results {
		touchedLocks = append(touchedLocks, r.Lock)
	}
	s.changed(c, touchedLocks...)
	out := make([]releasedJSON, 0, len(results))
	released := 0
	for _, r := range results {
		one := inspect.AuditRecord{Action: "force-unlock", Target: r.Lock, Reason: reason,
			Before: "held by " + r.Holder + " (release-all of client " + id + ")"}
		rj := releasedJSON{Lock: r.Lock, Holder: r.Holder, Released: r.Err == nil}
		if r.What == "waits" {
			one.Action, one.Before = "drop-waiters", "queued as "+r.Holder+" (release-all of client "+id+")"
		}
		switch {
		case r.Err == nil && r.What == "waits":
			released++
			one.After, one.Outcome = "fair-queue places removed ("+r.Holder+")", inspect.OutcomeOK
		case r.What == "waits" && errors.Is(r.Err, inspect.ErrHolderChanged):
			one.Outcome, rj.Error = inspect.OutcomeConflict, "no longer queued; nothing was changed"
		case r.Err == nil:
			released++
			one.After, one.Outcome = "released (holder "+r.Holder+")", inspect.OutcomeOK
			s.publishEvent(eventFrame{Type: inspect.EventForceUnlock, Name: r.Lock, Holder: r.Holder, At: time.Now()})
		case errors.Is(r.Err, inspect.ErrHolderChanged):
			one.Outcome, rj.Error = inspect.OutcomeConflict, "no longer held by that holder; nothing was changed"
		case errors.Is(r.Err, store.ErrNotFound):
			one.Outcome, rj.Error = inspect.OutcomeNotFound, "the lock is gone"
		default:
			one.Outcome, rj.Error = inspect.OutcomeError, "could not release: "+toHTTPError(r.Err).Message
		}
		one.Detail = rj.Error
		s.appendAudit(c, one)
		out = append(out, rj)
	}
	rec.After = strconv.Itoa(released) + " of " + strconv.Itoa(len(results)) + " holds released"
	s.reqLog(c).Info("client holds released", "client", id, "released", released, "tried", len(results), "reason", reason)
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
	reason, rerr := checkReason(body.Reason)
	if rerr != nil {
		return rerr
	}
	out, err := s.releaseAll(c, id, reason)
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
		Clients: clientRows(clientList(s.sampler.latest())),
	}))
}

// handleReleaseAllForm is the Clients page's release-all button.
func (s *Server) handleReleaseAllForm(c echo.Context) error {
	id, err := clientIDParam(c)
	if err != nil {
		return err
	}
	reason, rerr := checkReason(c.FormValue(views.FieldReason))
	if rerr != nil {
		return rerr
	}
	out, err := s.releaseAll(c, id, reason)
	if err != nil {
		return err
	}
	page := views.ClientsPage{Layout: s.layout(c, "Clients", views.NavClients),
		Clients: clientRows(clientList(s.sampler.latest())), ReleasedFor: id}
	for _, r := range out {
		page.Released = append(page.Released, views.ReleasedRow{Lock: r.Lock, Holder: r.Holder, Released: r.Released, Error: r.Error})
	}
	return s.render(c, http.StatusOK, views.Clients(page))
}

package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/views"
	"github.com/lockwarden/lockwarden/web/auth"
	"github.com/lockwarden/lockwarden/web/events"
	"github.com/lockwarden/lockwarden/web/feed"
)

// The lock event stream (web/events): its page and API, and /ws, where
// the feed (web/feed) sends every viewer the events, the stats frames and
// the alerts as they happen.

// eventRows are events as the overview, the wall and the events page list
// them.
func eventRows(evs []events.Entry) []views.EventRow {
	out := make([]views.EventRow, 0, len(evs))
	for _, e := range evs {
		out = append(out, views.EventRow{Type: string(e.Type), Name: e.Name, Channel: e.Channel,
			Message: e.Message, Holder: e.Holder, At: e.At})
	}
	return out
}

// eventTypes are the types ?type= takes.
var eventTypes = []string{string(inspect.EventUnlock), string(inspect.EventForceUnlock), string(inspect.EventExpired)}

// filteredEvents are the console's newest events (up to n) whose lock
// name holds ?q= (any case) and whose type is ?type=, newest first.
func (s *Server) filteredEvents(c echo.Context, n int) (q, typ string, out []events.Entry, err error) {
	q, typ = strings.TrimSpace(c.QueryParam("q")), c.QueryParam("type")
	if len(q) > maxSearchLen {
		return q, typ, nil, inspect.Invalid("q", fmt.Sprintf("q must be at most %d bytes", maxSearchLen))
	}
	if typ != "" && !slices.Contains(eventTypes, typ) {
		return q, typ, nil, inspect.Invalid("type", "type must be one of "+strings.Join(eventTypes, ", "))
	}
	lq := strings.ToLower(q)
	out = []events.Entry{}
	for _, e := range s.events.Recent(events.LogSize) {
		if len(out) == n {
			break
		}
		if (typ == "" || string(e.Type) == typ) && strings.Contains(strings.ToLower(e.Name), lq) {
			out = append(out, e)
		}
	}
	return q, typ, out, nil
}

func (s *Server) handleEventsPage(c echo.Context) error {
	q, typ, evs, err := s.filteredEvents(c, views.EventRows)
	if err != nil {
		return err
	}
	page := views.EventsPage{Layout: s.layout(c, "Events", views.NavEvents), Events: eventRows(evs),
		Q: q, Type: typ, Types: eventTypes, Empty: "No events yet."}
	if q != "" || typ != "" {
		what := "No " + strings.TrimSpace(typ+" event")
		if q != "" {
			what += fmt.Sprintf(" on a lock whose name holds %q", q)
		}
		page.Empty = fmt.Sprintf("%s among the %d the console remembers; new ones that match appear here.",
			what, len(s.events.Recent(events.LogSize)))
	}
	return s.render(c, http.StatusOK, views.Events(page))
}

// handleAPIEvents is {"events": [...]}, newest first, filtered by ?q=
// (a part of the lock's name) and ?type= as the page is.
func (s *Server) handleAPIEvents(c echo.Context) error {
	_, _, evs, err := s.filteredEvents(c, events.LogSize)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"events": evs})
}

// handleWS hands a websocket viewer to the feed.
func (s *Server) handleWS(c echo.Context) error {
	if !websocket.IsWebSocketUpgrade(c.Request()) {
		return inspect.Invalid("", "websocket upgrade required")
	}
	if !auth.SameOrigin(c.Request()) {
		return inspect.Errorf(inspect.CodeForbidden, "cross-origin websocket refused")
	}
	// The slot is taken before the upgrade, so a flood of connections is
	// refused with a plain 503 and costs no goroutines.
	release, err := s.wsSlots.Take(identityOf(c).Role == auth.RoleAdmin && !s.auth.LocalMode(), c.RealIP())
	if err != nil {
		s.requests.wsRejected.Add(1)
		return err
	}
	att := feed.Attach{Release: release}
	// A browser's connection lives only as long as its session.
	if _, cerr := c.Request().Cookie(auth.SessionCookie); cerr == nil && !identityOf(c).Bearer && !s.auth.LocalMode() {
		att.Watch = s.sessionWatch(c.Request(), identityOf(c).Role)
	}
	return s.feed.Connect(c.Response(), c.Request(), att)
}

// sessionWatch is the watch of a browser's websocket: every
// sessionRecheck it checks the session behind r, and it asks the feed to
// close the connection (1008) once the session has ended (signed out,
// timed out, its token changed) or changed role. The check counts as a use
// of the session: a wall display that is watching is in use.
func (s *Server) sessionWatch(req *http.Request, role auth.Role) func(done <-chan struct{}) string {
	// The watch outlives the handler: it keeps its own copy of the request
	// (its cookie and address), never the one the server may recycle.
	r := req.Clone(s.baseCtx)
	return func(done <-chan struct{}) string {
		t := time.NewTicker(s.cfg.sessionRecheck())
		defer t.Stop()
		for {
			select {
			case <-done:
				return ""
			case <-t.C:
				ctx, cancel := context.WithTimeout(s.baseCtx, 5*time.Second)
				id, err := s.auth.Identify(ctx, r, time.Now())
				cancel()
				if err == nil && id.Role == role {
					continue
				}
				if errors.Is(err, auth.ErrUnavailable) {
					continue // Redis is down: the console says so; keep watching
				}
				return "session ended; sign in again"
			}
		}
	}
}

// eventRoutes adds the events page, /api/events and /ws.
func (s *Server) eventRoutes(e *echo.Echo) {
	e.GET("/events", s.handleEventsPage)
	e.GET("/api/events", s.handleAPIEvents)
	e.GET("/ws", s.handleWS)
}

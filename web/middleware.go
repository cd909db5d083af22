package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/admin"
	"github.com/lockwarden/lockwarden/web/auth"
	"github.com/lockwarden/lockwarden/web/connlimit"
)

// The console's own middleware: each asks web/auth or web/admin for the
// decision and turns the answer into Echo's terms.

// checkHost refuses requests for hosts the console does not serve.
func (s *Server) checkHost(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := s.hosts.Load().Check(c.Request()); err != nil {
			return err
		}
		return next(c)
	}
}

// securityHeaders sets auth's response headers on every answer.
func securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		auth.SetSecurityHeaders(c.Response().Header(), c.Request().Host)
		return next(c)
	}
}

// crossOrigin refuses state changes a browser sent for another site.
func crossOrigin(allowedHosts []string) echo.MiddlewareFunc {
	co := auth.NewCrossOrigin(allowedHosts)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if err := co.Check(c.Request()); err != nil {
				return err
			}
			return next(c)
		}
	}
}

// authenticate decides the identity of every request and puts it in the
// request's context. A wrong Bearer token is refused at once (401), and
// any token from an address that guessed too often (429 with
// Retry-After); both are audited as failed sign-ins.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := s.auth.Identify(c.Request().Context(), c.Request(), time.Now())
		if err != nil {
			s.refusedSignIn(c, "bearer", err)
			return err
		}
		setIdentity(c, id)
		if id.Role != auth.RoleNone {
			connlimit.Authenticated(c.Request().Context())
		}
		return next(c)
	}
}

func setIdentity(c echo.Context, id auth.Identity) {
	c.SetRequest(c.Request().WithContext(auth.WithIdentity(c.Request().Context(), id)))
}

func identityOf(c echo.Context) auth.Identity { return auth.IdentityOf(c.Request().Context()) }

// authorize enforces the roles. Anonymous browsers are sent to the
// sign-in page; API clients get 401.
func (s *Server) authorize(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		method := r.Method
		if s.queries[method+" "+c.Path()] {
			method = http.MethodGet // it changes nothing: reading is enough
		}
		err := auth.Authorize(identityOf(c), method, r.URL.Path)
		if errors.Is(err, auth.ErrUnauthenticated) && auth.IsSafeMethod(r.Method) && !wantsJSON(c) &&
			r.URL.Path != "/ws" && r.URL.Path != "/metrics" {
			return c.Redirect(http.StatusSeeOther, "/login?next="+url.QueryEscape(r.URL.RequestURI()))
		}
		if err != nil {
			return err
		}
		return next(c)
	}
}

// actor is who sent the request, as the audit trail names them.
func (s *Server) actor(c echo.Context) admin.Actor {
	id := identityOf(c)
	return admin.Actor{Role: id.Role.String(), Fingerprint: id.Fingerprint, Remote: c.RealIP(), RequestID: requestID(c)}
}

// auditSlot is what a state-changing request tells the audit middleware:
// that an admin action recorded it already, or what the client was told
// when the handler answered without an error.
type auditSlot struct {
	recorded bool
	detail   string
	// audited is called once a record is in the trail (the history's
	// change markers read it again).
	audited func()
}

type auditSlotKey struct{}

func slotOf(c echo.Context) *auditSlot {
	if sl, ok := c.Request().Context().Value(auditSlotKey{}).(*auditSlot); ok {
		return sl
	}
	return &auditSlot{}
}

// recorded marks the request as audited by the admin action it ran.
func recorded(c echo.Context) {
	sl := slotOf(c)
	sl.recorded = true
	if sl.audited != nil {
		sl.audited()
	}
}

// auditMutations records every state-changing request that no admin
// action recorded: refusals (role, origin, bad input) and routes without
// an action. Sign-in records itself (it knows success from failure better
// than a status does). The action is the route's, as registered in routes.
func (s *Server) auditMutations(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if auth.IsSafeMethod(r.Method) || c.Path() == "/login" || s.queries[r.Method+" "+c.Path()] {
			return next(c)
		}
		slot := &auditSlot{audited: s.hcache.changed}
		c.SetRequest(r.WithContext(context.WithValue(r.Context(), auditSlotKey{}, slot)))
		err := next(c)
		if slot.recorded {
			return err
		}
		rec := inspect.AuditRecord{Action: s.actionOf(r.Method, c.Path()), Detail: slot.detail}
		if name, nerr := nameParam(c); nerr == nil {
			rec.Target = name
		}
		status := c.Response().Status
		if err != nil {
			he := toHTTPError(err)
			status = he.Status
			rec.Detail = he.Message
		}
		rec.Outcome = outcomeFor(status)
		// Only an admin's requests go to the change trail; everyone
		// else's are refusals, kept apart so they cannot flush it.
		if identityOf(c).Role == auth.RoleAdmin {
			s.admin.Record(c.Request().Context(), s.actor(c), rec)
			slot.audited()
		} else {
			s.admin.Refused(c.Request().Context(), s.actor(c), rec)
		}
		return err
	}
}

// actionOf names what a route does, for the record: the action routes
// registered for it, else its method and route.
func (s *Server) actionOf(method, route string) string {
	if a, ok := s.actions[method+" "+route]; ok {
		return a
	}
	return strings.ToLower(method) + " " + route
}

func outcomeFor(status int) string {
	switch {
	case status < 400:
		return inspect.OutcomeOK
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return inspect.OutcomeDenied
	case status == http.StatusNotFound:
		return inspect.OutcomeNotFound
	case status == http.StatusConflict:
		return inspect.OutcomeConflict
	case status < 500:
		return inspect.OutcomeInvalid
	}
	return inspect.OutcomeError
}

// refusedSignIn records a refused token in the refused trail (throttled
// per source there) and tells the client when to try again.
func (s *Server) refusedSignIn(c echo.Context, target string, err error) {
	var ar *auth.Refusal
	if errors.As(err, &ar) && ar.RetryAfter > 0 {
		c.Response().Header().Set("Retry-After", strconv.Itoa(int(ar.RetryAfter/time.Second)))
	}
	s.admin.Refused(c.Request().Context(), s.actor(c),
		inspect.AuditRecord{Action: admin.ActionSignIn, Target: target, Outcome: outcomeFor(toHTTPError(err).Status), Detail: err.Error()})
}

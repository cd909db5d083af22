package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/views"
	"github.com/lockwarden/lockwarden/web/admin"
	"github.com/lockwarden/lockwarden/web/auth"
	"github.com/lockwarden/lockwarden/web/connlimit"
)

// The console's own middleware, in the order routes applies it: an ID
// for every request and one log line about it, the Host allow-list and
// security headers, then who is asking (web/auth decides; the sign-in
// pages start a session) and what they may reach (role, --match).

// recoverPanics is Echo's Recover, handing the panic and its stack back as
// an error so observe logs it with the request ID and handleError answers
// 500 (Echo's default would print through its own logger).
var recoverPanics = middleware.RecoverWithConfig(middleware.RecoverConfig{
	DisableErrorHandler: true,
	LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
		return fmt.Errorf("panic: %w\n%s", err, stack)
	},
})

// Every request gets an ID, echoed in X-Request-ID, attached to each log
// line and audit record about it, so an operator can go from a user's
// error page to the log line with its cause.
const requestIDKey = "lw.request_id"

func newRequestID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

// validRequestID accepts a proxy's ID only if it is short and plain, so a
// client cannot inject text into logs through it.
func validRequestID(v string) bool {
	if v == "" || len(v) > 64 {
		return false
	}
	for _, r := range v {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// requestIDs is Echo's RequestID with a check it lacks: a proxy's ID is
// kept only when validRequestID accepts it, otherwise a fresh one replaces
// it in the response header too.
var requestIDs = middleware.RequestIDWithConfig(middleware.RequestIDConfig{
	Generator: newRequestID,
	RequestIDHandler: func(c echo.Context, id string) {
		if !validRequestID(id) {
			id = newRequestID()
			c.Response().Header().Set(echo.HeaderXRequestID, id)
		}
		c.Set(requestIDKey, id)
	},
})

func requestID(c echo.Context) string {
	id, _ := c.Get(requestIDKey).(string)
	return id
}

// reqLog is the server's logger with this request's ID.
func (s *Server) reqLog(c echo.Context) *slog.Logger {
	return s.log.With("request_id", requestID(c))
}

// quietPath: probes, scrapes and static files are logged at debug only.
func quietPath(p string) bool {
	return p == "/healthz" || p == "/readyz" || p == "/metrics" || strings.HasPrefix(p, "/static/")
}

// observe runs right after requestIDs, outside everything else: the
// per-class request counter, Redis error counting, and one log line per request. 5xx are
// logged at error with their cause; 4xx at debug, because a scanner
// hitting the console must not flood the log.
func (s *Server) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		id := requestID(c)

		err := next(c)
		status := c.Response().Status
		if err != nil {
			status = toHTTPError(err).Status
			if isRedisFailure(err) {
				s.requests.redisErrors.Add(1)
			}
		}
		s.requests.count(status)
		r := c.Request()
		attrs := []any{"request_id", id, "method", r.Method, "path", r.URL.Path, "status", status,
			"duration", time.Since(start), "remote", c.RealIP()}
		switch {
		case status >= 500:
			s.log.Error("request failed", append(attrs, "err", err)...)
		case status >= 400 || quietPath(r.URL.Path):
			s.log.Debug("request", attrs...)
		default:
			s.log.Info("request", attrs...)
		}
		return err
	}
}

// isRedisFailure: the request failed because Redis did not answer.
func isRedisFailure(err error) bool {
	var ce *inspect.Error
	if errors.As(err, &ce) && ce.Err == nil {
		return false
	}
	return errors.Is(err, context.DeadlineExceeded) || inspect.RedisUnreachable(err)
}

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

// noStore keeps every answer that needs a role out of caches on the way
// (proxies, the browser's back button on a shared machine).
func noStore(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if p := c.Request().URL.Path; !auth.PublicPath(p) || p == "/login" {
			c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
		}
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

// inScope: the console shows and acts on names matching its --match only.
func (s *Server) inScope(name string) bool { return inspect.GlobMatch(s.cfg.match(), name) }

// scoped answers 404 for a route's object outside --match, for every
// method: what the console does not list, it neither shows nor changes.
func (s *Server) scoped(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Param("name") == "" {
			return next(c)
		}
		name, err := nameParam(c)
		if err != nil {
			return err
		}
		// A name no object can have is the handler's 400 to give.
		if len(name) <= store.MaxNameLen && !s.inScope(name) {
			return inspect.Errorf(inspect.CodeNotFound, "no lock or limiter named %q in this console's --match", name)
		}
		return next(c)
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

// refusedSignIn records a refused token in the refused trail (throttled
// per source there) and tells the client when to try again.
func (s *Server) refusedSignIn(c echo.Context, target string, err error) {
	e := inspect.ErrorOf(err)
	if e.RetryAfter > 0 {
		c.Response().Header().Set("Retry-After", strconv.Itoa(int(e.RetryAfter/time.Second)))
	}
	s.admin.Refused(c.Request().Context(), s.actor(c),
		inspect.AuditRecord{Action: admin.ActionSignIn, Target: target, Outcome: outcomeFor(toHTTPError(err).Status), Detail: e.Message})
}

// loginPage is the sign-in form, with msg above it when a sign-in failed.
func (s *Server) loginPage(c echo.Context, status int, next, msg string) error {
	return s.render(c, status, views.Login(views.LoginPage{
		Layout: s.layout(c, "Sign in", ""),
		Next:   auth.SafeNext(next),
		Error:  msg,
	}))
}

func (s *Server) handleLoginPage(c echo.Context) error {
	next := auth.SafeNext(c.QueryParam("next"))
	if s.auth.LocalMode() {
		// Nothing to sign in to: everyone on loopback is an admin.
		return c.Redirect(http.StatusSeeOther, next)
	}
	return s.loginPage(c, http.StatusOK, next, "")
}

// handleLogin checks the submitted token and starts a session. A failure
// goes to the refused trail, a success to the sign-in trail's summaries.
func (s *Server) handleLogin(c echo.Context) error {
	next := auth.SafeNext(c.FormValue("next"))
	if s.auth.LocalMode() {
		return c.Redirect(http.StatusSeeOther, next)
	}
	cookie, id, err := s.auth.SignIn(c.Request().Context(), c.Request(), c.FormValue("token"), time.Now())
	if err != nil {
		s.refusedSignIn(c, "session", err)
		msg := "That token is not valid."
		if !errors.Is(err, auth.ErrUnauthenticated) {
			msg = toHTTPError(err).Message
		}
		return s.loginPage(c, toHTTPError(err).Status, next, msg)
	}
	// The sign-in is summarised (auth.SignIns), not recorded one by one:
	// writeAuditSummaries puts it in the sign-in trail.
	c.SetCookie(cookie)
	setIdentity(c, id)
	return c.Redirect(http.StatusSeeOther, next)
}

// handleLogout ends the session in Redis, so a copy of the cookie is dead
// on every replica, and clears the cookie.
func (s *Server) handleLogout(c echo.Context) error {
	if err := s.auth.SignOut(c.Request().Context(), c.Request()); err != nil {
		return err
	}
	c.SetCookie(auth.SessionCookieOf("", -1, auth.SecureRequest(c.Request())))
	if s.auth.LocalMode() {
		return c.Redirect(http.StatusSeeOther, "/")
	}
	return c.Redirect(http.StatusSeeOther, "/login")
}

// signInRoutes adds the sign-in page and sign-out.
func (s *Server) signInRoutes(e *echo.Echo) {
	e.GET("/login", s.handleLoginPage)
	e.POST("/login", s.handleLogin)
	s.mutation(e.POST, "/logout", admin.ActionSignOut, s.handleLogout)
}

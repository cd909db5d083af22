package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/admin"
	"github.com/lockwarden/lockwarden/web/auth"
)

// The console's defences against its own visitors: sign-in state in
// Redis (auth), the two audit trails (admin), connection and websocket
// limits, what may be cached, and the names it may act on.

// Defaults of the connection limits.
const (
	defaultReadTimeout    = 30 * time.Second
	defaultMaxConns       = 1024
	defaultMaxWSPerSource = 8
	// defaultSessionRecheck: how soon a browser's websocket notices that
	// its session ended.
	defaultSessionRecheck = 30 * time.Second
	// auditSummaryEvery is how often held-back refusals and failed
	// sign-ins are summarised into the refused trail.
	auditSummaryEvery = 10 * time.Second
)

func (c *Config) readTimeout() time.Duration {
	if c == nil || c.ReadTimeout <= 0 {
		return defaultReadTimeout
	}
	return c.ReadTimeout
}

func (c *Config) maxConns() int {
	if c == nil || c.MaxConns <= 0 {
		return defaultMaxConns
	}
	return c.MaxConns
}

func (c *Config) sessionRecheck() time.Duration {
	if c == nil || c.SessionRecheck <= 0 {
		return defaultSessionRecheck
	}
	return c.SessionRecheck
}

func (c *Config) maxWSPerSource() int {
	if c == nil || c.MaxWSPerSource <= 0 {
		return defaultMaxWSPerSource
	}
	return c.MaxWSPerSource
}

// refusedAuditKey is the trail of refused requests beside AuditKey (same
// hash tag, so a test's or a deployment's trails stay together).
func (c *Config) refusedAuditKey() string {
	if c.AuditKey == "" {
		return inspect.RefusedAuditKey
	}
	return c.AuditKey + ":refused"
}

func (s *Server) newAuthority() *auth.Authority {
	opts := auth.Options{Namespace: s.cfg.AuthNamespace,
		Sessions: &auth.SessionOptions{Idle: s.cfg.SessionIdle, MaxAge: s.cfg.SessionMaxAge}}
	if s.insp != nil {
		opts.Redis = s.insp.Redis()
	}
	return auth.New(s.cfg.AdminToken, s.cfg.ViewerToken, opts)
}

func (s *Server) newAdmin() *admin.Service {
	// What a broken hold changes besides the lock: the event log (and so
	// every viewer) and the history's record of how the hold ended.
	cfg := admin.Config{Inspector: s.insp, Live: s.live, Listeners: []admin.Listener{s.events, s.hist},
		Logger: s.log, InScope: s.inScope}
	if s.insp != nil {
		cfg.Audit = s.insp.AuditTrail(s.cfg.AuditKey, s.cfg.AuditRetention)
		cfg.Refused = admin.NewRefusedLog(s.insp.Audit(s.cfg.refusedAuditKey(), s.cfg.AuditMaxLen))
	}
	return admin.New(cfg)
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

// flashQuery is the query of a redirect after a change: the banner's code
// and the object's name, signed so that the page shows the name only when
// the console wrote it (flashName).
func (s *Server) flashQuery(c echo.Context, code, name string) url.Values {
	q := url.Values{"flash": {code}}
	if sig, err := s.auth.Sign(c.Request().Context(), "flash", code+"\x00"+name); err == nil {
		q.Set("name", name)
		q.Set("sig", sig)
	}
	return q
}

// flashName is the name flashQuery signed into this request's link; ""
// for any other.
func (s *Server) flashName(c echo.Context) string {
	code, name, sig := c.QueryParam("flash"), c.QueryParam("name"), c.QueryParam("sig")
	if code == "" || name == "" || sig == "" || !s.auth.Verify(c.Request().Context(), "flash", code+"\x00"+name, sig) {
		return ""
	}
	return name
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

// recentAudit is the newest n records of the trail ?trail= names: the
// changes (default) or the refused requests.
func (s *Server) recentAudit(c echo.Context, n int) ([]inspect.AuditRecord, error) {
	switch c.QueryParam("trail") {
	case "", "changes":
		return s.admin.Recent(c.Request().Context(), n)
	case "refused":
		if l := s.admin.RefusedLog(); l != nil {
			return l.Trail().Recent(c.Request().Context(), n)
		}
		return nil, nil
	}
	return nil, inspect.Invalid("trail", `trail must be "changes" or "refused"`)
}

// authFailures are the failed sign-ins of each source since the last
// call, as the refused trail's summary records.
func (s *Server) authFailures() []inspect.AuditRecord {
	fs := s.auth.Failures().Drain()
	out := make([]inspect.AuditRecord, 0, len(fs))
	for _, f := range fs {
		out = append(out, inspect.AuditRecord{Remote: f.Source, Action: "auth-failures", Outcome: inspect.OutcomeDenied,
			Detail: strconv.Itoa(f.Failed) + " wrong tokens and " + strconv.Itoa(f.Limited) + " attempts refused with 429 from " + f.Source +
				" between " + f.First.UTC().Format(time.RFC3339) + " and " + f.Last.UTC().Format(time.RFC3339)})
	}
	return out
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

// CheckTokens refuses tokens too short to resist guessing (see
// auth.CheckTokens); the binary checks its flags with it.
func CheckTokens(adminToken, viewerToken string) error {
	return auth.CheckTokens(adminToken, viewerToken)
}

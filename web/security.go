package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
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
	// adminWSSlots: admins' websockets, kept apart from the viewers' cap
	// so that a viewer's flood never locks an admin out.
	adminWSSlots = 32
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

// signInAuditKey is the trail of sign-in summaries beside AuditKey (same
// hash tag): sign-ins are not changes, and a loop of them must not crowd
// the change trail.
func (c *Config) signInAuditKey() string {
	if c.AuditKey == "" {
		return inspect.AuditKey + ":sign-ins"
	}
	return c.AuditKey + ":sign-ins"
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
	cfg := admin.Config{Inspector: s.insp, Live: s.live, Events: brokenLocks{s.events}, Logger: s.log, InScope: s.inScope}
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
			return notFound(fmt.Sprintf("no lock or limiter named %q in this console's --match", name))
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
	case "sign-ins":
		if s.insp != nil {
			return s.insp.Audit(s.cfg.signInAuditKey(), s.cfg.AuditMaxLen).Recent(c.Request().Context(), n)
		}
		return nil, nil
	}
	return nil, badRequest("trail", `trail must be "changes", "refused" or "sign-ins"`)
}

// auditSummaries writes, every auditSummaryEvery, what was held back from
// the refused trail and a summary of each source's wrong tokens.
func (s *Server) auditSummaries(ctx context.Context) {
	t := time.NewTicker(auditSummaryEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.writeAuditSummaries(ctx)
		}
	}
}

func (s *Server) writeAuditSummaries(ctx context.Context) {
	log := s.admin.RefusedLog()
	if log == nil {
		return
	}
	if err := log.Flush(ctx); err != nil {
		s.log.Warn("refused-request summary failed", "err", err)
	}
	signIns := s.insp.Audit(s.cfg.signInAuditKey(), s.cfg.AuditMaxLen)
	for _, si := range s.auth.SignIns().Drain() {
		rec := inspect.AuditRecord{Role: si.Role, Fingerprint: si.Fingerprint, Remote: si.Source, Action: admin.ActionSignIn,
			Target: "session", After: si.Role, Outcome: inspect.OutcomeOK, Detail: signInDetail(si)}
		if _, err := signIns.Append(ctx, rec); err != nil {
			s.log.Warn("sign-in summary failed", "err", err)
		}
	}
	for _, f := range s.auth.Failures().Drain() {
		rec := inspect.AuditRecord{Remote: f.Source, Action: "auth-failures", Outcome: inspect.OutcomeDenied,
			Detail: summaryDetail(f)}
		if err := log.Summary(ctx, rec); err != nil {
			s.log.Warn("sign-in failure summary failed", "err", err)
		}
	}
}

func signInDetail(si auth.SignInSummary) string {
	return strconv.Itoa(si.Count) + " sign-ins as " + si.Role + " from " + si.Source +
		" between " + si.First.UTC().Format(time.RFC3339) + " and " + si.Last.UTC().Format(time.RFC3339)
}

func summaryDetail(f auth.FailureSummary) string {
	return strconv.Itoa(f.Failed) + " wrong tokens and " + strconv.Itoa(f.Limited) + " attempts refused with 429 from " + f.Source +
		" between " + f.First.UTC().Format(time.RFC3339) + " and " + f.Last.UTC().Format(time.RFC3339)
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

// wsSlots admits websockets: viewers up to a total and a per-address cap,
// admins in slots of their own.
type wsSlots struct {
	mu                    sync.Mutex
	viewers, admins       int
	maxViewers, perSource int
	bySource              map[string]int
}

func newWSSlots(maxViewers, perSource int) *wsSlots {
	return &wsSlots{maxViewers: maxViewers, perSource: perSource, bySource: map[string]int{}}
}

// take reserves a slot for a connection from source and returns its
// release (call once), or a 503/429 saying which cap was hit. admin takes
// an admin slot (in local mode everyone is an admin, so nobody does).
func (w *wsSlots) take(admin bool, source string) (func(), error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if admin {
		if w.admins >= adminWSSlots {
			return nil, &httpError{Status: http.StatusServiceUnavailable, Message: "too many admin connections; close one"}
		}
		w.admins++
		return w.releaser(func() { w.admins-- }), nil
	}
	switch {
	case w.bySource[source] >= w.perSource:
		return nil, &httpError{Status: http.StatusTooManyRequests,
			Message: "too many live connections from this address; close one (at most " + strconv.Itoa(w.perSource) + ")"}
	case w.viewers >= w.maxViewers:
		return nil, &httpError{Status: http.StatusServiceUnavailable, Message: "too many live viewers; try again later"}
	}
	w.viewers++
	w.bySource[source]++
	return w.releaser(func() {
		w.viewers--
		if w.bySource[source]--; w.bySource[source] <= 0 {
			delete(w.bySource, source)
		}
	}), nil
}

func (w *wsSlots) releaser(undo func()) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			undo()
		})
	}
}

// active is how many connections hold a slot.
func (w *wsSlots) active() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.viewers + w.admins
}

// CheckTokens refuses tokens too short to resist guessing (see
// auth.CheckTokens); the binary checks its flags with it.
func CheckTokens(adminToken, viewerToken string) error {
	return auth.CheckTokens(adminToken, viewerToken)
}

package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/views"
	"github.com/lockwarden/lockwarden/web/admin"
	"github.com/lockwarden/lockwarden/web/auth"
)

// The audit trail: its pages, and what goes into it besides web/admin's
// actions, which record themselves: auditMutations records the
// state-changing requests that reached no action (refusals, bad input),
// sign-ins record themselves, and the failed sign-ins of each source are
// summarised into the refused trail.

// defaultAuditPage and maxAuditPage bound ?limit= on the audit views.
const (
	defaultAuditPage = 100
	maxAuditPage     = 500
)

func auditLimit(c echo.Context) (int, error) {
	v := c.QueryParam("limit")
	if v == "" {
		return defaultAuditPage, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxAuditPage {
		return 0, inspect.Invalid("limit", fmt.Sprintf("limit must be a whole number from 1 to %d", maxAuditPage))
	}
	return n, nil
}

// auditPage is one page of the trail ?trail= names (the changes, the
// refused requests or the sign-in summaries): ?limit= records older than
// ?before= (an id a page gave as next_before; none: the newest), newest
// first, and the next page's before ("" on the last page).
func (s *Server) auditPage(c echo.Context) (trail string, recs []inspect.AuditRecord, next string, err error) {
	n, err := auditLimit(c)
	if err != nil {
		return "", nil, "", err
	}
	var a *inspect.Audit
	switch trail = c.QueryParam("trail"); trail {
	case "", "changes":
		a = s.admin.Trail()
	case "refused":
		if l := s.admin.RefusedLog(); l != nil {
			a = l.Trail()
		}
	case "sign-ins":
		if s.insp != nil {
			a = s.insp.Audit(s.cfg.signInAuditKey(), s.cfg.AuditMaxLen)
		}
	default:
		return "", nil, "", inspect.Invalid("trail", `trail must be "changes", "refused" or "sign-ins"`)
	}
	if a == nil {
		return trail, []inspect.AuditRecord{}, "", nil
	}
	recs, next, err = a.Page(c.Request().Context(), c.QueryParam("before"), n)
	return trail, recs, next, err
}

// handleAPIAudit is {"records": [...], "next_before": "<id>"}: pass
// next_before as ?before= for the older page ("" on the last page).
func (s *Server) handleAPIAudit(c echo.Context) error {
	_, recs, next, err := s.auditPage(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"records": recs, "next_before": next})
}

func (s *Server) handleAuditPage(c echo.Context) error {
	trail, recs, next, err := s.auditPage(c)
	if err != nil {
		return err
	}
	page := views.AuditPage{Layout: s.layout(c, "Audit", views.NavAudit)}
	var reg *inspect.Registry
	if sn := s.live.Latest(); sn != nil {
		reg = sn.Registry
	}
	for _, r := range recs {
		page.Records = append(page.Records, views.AuditRow{At: r.Time, Role: r.Role, Fingerprint: r.Fingerprint,
			Remote: r.Remote, Action: r.Action, Target: r.Target, TargetWho: clientName(reg, r.Target),
			Before: humanNames(reg, r.Before), After: humanNames(reg, r.After),
			Outcome: r.Outcome, Reason: r.Reason, Detail: r.Detail})
	}
	q := url.Values{}
	if trail != "" {
		q.Set("trail", trail)
	}
	if l := c.QueryParam("limit"); l != "" {
		q.Set("limit", l)
	}
	if c.QueryParam("before") != "" {
		page.NewestURL = "/audit" + queryString(q)
	}
	if next != "" {
		q.Set("before", next)
		page.OlderURL = "/audit" + queryString(q)
	}
	return s.render(c, http.StatusOK, views.Audit(page))
}

// clientIDs finds client ids in audit text, with the owner of a holder
// field ("<uuid>:<owner>") when one follows.
var clientIDs = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(:[^\s,;×()]+)?`)

// humanNames puts the registered name before each client id or holder
// field in text ("orders-api on host-7 (pid 42), owner 77 (<id>)"); ids
// the registry does not know (unregistered, or gone for an hour) stay as
// they are.
func humanNames(reg *inspect.Registry, text string) string {
	return clientIDs.ReplaceAllStringFunc(text, func(id string) string {
		if w := holderOrClient(reg, id); w != "" {
			return w + " (" + id + ")"
		}
		return id
	})
}

// clientName is what the registry calls a client id or holder field, ""
// when it does not know it.
func clientName(reg *inspect.Registry, id string) string {
	if !clientIDs.MatchString(id) {
		return ""
	}
	return holderOrClient(reg, id)
}

func holderOrClient(reg *inspect.Registry, id string) string {
	if strings.Contains(id, ":") {
		if _, ok := reg.Lookup(id); ok {
			return inspect.DescribeHolder(reg, id)
		}
		return ""
	}
	if ci, ok := reg.Lookup(id + ":x"); ok {
		return fmt.Sprintf("%s on %s (pid %d)", ci.App, ci.Host, ci.PID)
	}
	return ""
}

// queryString is "?"+q.Encode(), or "" when q is empty.
func queryString(q url.Values) string {
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
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

// previewed marks a state-changing request that only showed what a change
// would do (an edit's confirmation): nothing changed, so nothing is
// recorded.
func previewed(c echo.Context) { slotOf(c).recorded = true }

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
		slot := &auditSlot{audited: s.hcache.Changed}
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

// authFailures are the failed sign-ins of each source since the last
// call, as the refused trail's summary records.
// runAuditSummaries writes, every auditSummaryEvery until ctx ends, what
// the trails summarise rather than record one by one.
func (s *Server) runAuditSummaries(ctx context.Context) {
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

// writeAuditSummaries writes the refused trail's summaries (what its
// throttle held back, each source's failed sign-ins) and the sign-in
// trail's: successful sign-ins per role, token and source.
func (s *Server) writeAuditSummaries(ctx context.Context) {
	s.admin.WriteSummaries(ctx, s.authFailures)
	if s.insp == nil {
		return
	}
	signIns := s.insp.Audit(s.cfg.signInAuditKey(), s.cfg.AuditMaxLen)
	for _, si := range s.auth.SignIns().Drain() {
		rec := inspect.AuditRecord{Role: si.Role, Fingerprint: si.Fingerprint, Remote: si.Source, Action: admin.ActionSignIn,
			Target: "session", After: si.Role, Outcome: inspect.OutcomeOK,
			Detail: strconv.Itoa(si.Count) + " sign-ins as " + si.Role + " from " + si.Source +
				" between " + si.First.UTC().Format(time.RFC3339) + " and " + si.Last.UTC().Format(time.RFC3339)}
		if _, err := signIns.Append(ctx, rec); err != nil {
			s.log.Warn("sign-in summary failed", "err", err)
		}
	}
}

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

// auditRoutes adds the audit page and its API.
func (s *Server) auditRoutes(e *echo.Echo) {
	e.GET("/audit", s.handleAuditPage)
	e.GET("/api/audit", s.handleAPIAudit)
}

// changeMarker is an audited change as a chart marks it.
func changeMarker(r inspect.AuditRecord) views.ChartMarker {
	who := r.Role
	if who == "" {
		who = "anonymous"
	}
	return views.ChartMarker{T: r.Time, Label: who + ": " + changeWhat(r), Detail: changeLabel(r)}
}

// changeWhat is what a change did, short: the settings that differ
// between the audit's before and after ("rate 20 → 40"), "reset" for a
// counter's reset.
func changeWhat(r inspect.AuditRecord) string {
	if r.Action == admin.ActionReset {
		return "reset"
	}
	before, after := settings(r.Before), settings(r.After)
	var parts []string
	for _, kv := range after {
		was := ""
		for _, b := range before {
			if b[0] == kv[0] {
				was = b[1]
			}
		}
		if was != kv[1] {
			name, unit := kv[0], ""
			if n, ok := strings.CutSuffix(name, "_ms"); ok {
				name, unit = n, " ms"
			}
			parts = append(parts, name+" "+was+" → "+kv[1]+unit)
		}
	}
	if len(parts) == 0 {
		return r.Action
	}
	return strings.Join(parts, ", ")
}

// settings reads an audit state such as "rate=20 interval_ms=100" as
// key-value pairs in order; words without "=" are left out.
func settings(state string) [][2]string {
	var out [][2]string
	for _, f := range strings.Fields(state) {
		if k, v, ok := strings.Cut(f, "="); ok {
			out = append(out, [2]string{k, v})
		}
	}
	return out
}

// changeLabel says what an audited change did, all of it, in words.
func changeLabel(r inspect.AuditRecord) string {
	var b strings.Builder
	b.WriteString(r.Time.UTC().Format("Jan 2 15:04:05") + " UTC " + r.Action)
	if r.Role != "" {
		b.WriteString(" by " + r.Role)
	}
	if r.Fingerprint != "" {
		b.WriteString(" (token " + r.Fingerprint + ")")
	}
	if r.Before != "" || r.After != "" {
		fmt.Fprintf(&b, ": %s → %s", r.Before, r.After)
	}
	if r.Reason != "" {
		b.WriteString("; reason: " + r.Reason)
	}
	return b.String()
}

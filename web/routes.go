package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/lockwarden/lockwarden/static"
	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/views"
	"github.com/lockwarden/lockwarden/web/apiref"
	"github.com/lockwarden/lockwarden/web/history"
	"github.com/lockwarden/lockwarden/web/listing"
	"github.com/lockwarden/lockwarden/web/live"
)

// The route table (each screen adds its own routes) and what a handler
// reads from a request: its path and query parameters, a JSON body, and
// the latest snapshot.

func (s *Server) routes() *echo.Echo {
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = s.handleError
	// The audit trail and logs record the peer address. Forwarded-for
	// headers are the client's word, so they are not trusted.
	e.IPExtractor = echo.ExtractIPDirect()

	// Order matters: identify the request, refuse foreign hosts, bound the
	// body, then who is asking; the audit record opens before the checks
	// so refusals are recorded too; origin, then role.
	e.Use(requestIDs, s.observe, recoverPanics, securityHeaders, noStore, s.checkHost,
		middleware.BodyLimit(bodyLimit), s.authenticate, s.auditMutations, crossOrigin(s.cfg.AllowedHosts), s.authorize, s.scoped)

	// Each screen adds its pages and their API.
	s.statusRoutes(e)
	s.staticRoutes(e)
	s.signInRoutes(e)
	s.overviewRoutes(e)
	s.eventRoutes(e)
	s.lockRoutes(e)
	s.limiterRoutes(e)
	s.familyRoutes(e)
	s.clientRoutes(e)
	s.deadlockRoutes(e)
	s.auditRoutes(e)
	s.referenceRoutes(e)
	return e
}

// referenceRoutes adds the API reference (web/apiref), which a test holds
// to this table: a route added here without an entry there fails it.
func (s *Server) referenceRoutes(e *echo.Echo) {
	e.GET("/api", s.handleAPIReference)
	e.GET("/api/openapi.json", s.handleOpenAPI)
}

// handleAPIReference is GET /api: the reference as a page, or as JSON for
// a client that asks for it (?format=json, or Accept: application/json).
func (s *Server) handleAPIReference(c echo.Context) error {
	refs := apiref.Reference()
	if c.QueryParam("format") == "json" || wantsJSON(c) {
		return c.JSON(http.StatusOK, map[string]any{"routes": refs, "errors": apiref.Errors})
	}
	page := views.APIRefPage{Layout: s.layout(c, "API", ""), Errors: apiref.Errors}
	for _, r := range refs {
		v := views.APIRoute{Method: r.Method, Path: r.Path, Role: r.Role, Summary: r.Summary, Body: r.Body,
			Answer: r.Answer, Errors: r.Errors, Page: r.Page}
		for _, p := range r.Params {
			v.Params = append(v.Params, views.APIParam{Name: p.Name, In: p.In, Says: p.Says, Required: p.Required})
		}
		page.Routes = append(page.Routes, v)
	}
	return s.render(c, http.StatusOK, views.APIRef(page))
}

// handleOpenAPI is GET /api/openapi.json.
func (s *Server) handleOpenAPI(c echo.Context) error {
	version := "devel"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		version = bi.Main.Version
	}
	return c.JSON(http.StatusOK, apiref.OpenAPI(version))
}

// mutation adds a state-changing route and names the action the audit
// trail records for requests that reach no admin action (refused ones).
func (s *Server) mutation(add func(string, echo.HandlerFunc, ...echo.MiddlewareFunc) *echo.Route, path, action string, h echo.HandlerFunc) {
	r := add(path, h)
	s.actions[r.Method+" "+path] = action
}

// query adds a route that takes a body but changes nothing (a what-if):
// any role that may read may send it, and no audit trail records it. The
// cross-origin check still applies, as to every method that is not safe.
func (s *Server) query(add func(string, echo.HandlerFunc, ...echo.MiddlewareFunc) *echo.Route, path string, h echo.HandlerFunc) {
	r := add(path, h)
	s.queries[r.Method+" "+path] = true
}

// nameParam is the object name of the route: one path segment, unescaped
// exactly once. Echo matches on the raw path (and leaves the segment
// escaped) only when the request path holds escapes that decoding would
// change, such as %2F; otherwise the segment is already decoded, and
// decoding it again would turn a name like "%41" into "A".
func nameParam(c echo.Context) (string, error) {
	raw := c.Param("name")
	if c.Request().URL.RawPath == "" {
		return raw, nil
	}
	name, err := url.PathUnescape(raw)
	if err != nil {
		return "", inspect.Invalid("name", "the name in the path is not valid percent-encoding")
	}
	return name, nil
}

// matchParam is ?match=, compiled: at most inspect.MaxGlobLen bytes, and
// matched in time linear in each name (inspect.Glob).
func matchParam(c echo.Context) (string, *inspect.Glob, error) {
	m := c.QueryParam("match")
	if m == "" {
		return "", nil, nil
	}
	g, err := inspect.CompileGlob(m)
	if err != nil {
		return "", nil, inspect.Invalid("match", fmt.Sprintf("match must be at most %d bytes", inspect.MaxGlobLen))
	}
	return m, g, nil
}

// Paging bounds for list pages and list APIs.
const (
	defaultPageSize = 100
	maxPageSize     = 500
)

// maxSearchLen bounds ?q=, as inspect.MaxGlobLen bounds ?match=.
const maxSearchLen = inspect.MaxGlobLen

// parseListQuery reads ?q= ?match= ?kind= ?sort= ?order= ?limit= ?cursor=.
// Every bad value is a 400 naming the parameter; nothing is guessed.
func parseListQuery(c echo.Context, sorts []string, kinds []inspect.Kind) (listing.Query, error) {
	q := listing.Query{Sort: listing.SortName, Limit: defaultPageSize}
	var err error
	if q.Match, q.Glob, err = matchParam(c); err != nil {
		return q, err
	}
	q.Q = strings.TrimSpace(c.QueryParam("q"))
	if len(q.Q) > maxSearchLen {
		return q, inspect.Invalid("q", fmt.Sprintf("q must be at most %d bytes", maxSearchLen))
	}
	if k := c.QueryParam("kind"); k != "" {
		if !slices.Contains(kinds, inspect.Kind(k)) {
			return q, inspect.Invalid("kind", fmt.Sprintf("kind must be one of %s", kindList(kinds)))
		}
		q.Kind = inspect.Kind(k)
	}
	if s := c.QueryParam("sort"); s != "" {
		if !slices.Contains(sorts, s) {
			return q, inspect.Invalid("sort", "sort must be one of "+strings.Join(sorts, ", "))
		}
		q.Sort = s
	}
	switch o := c.QueryParam("order"); o {
	case "", "asc":
	case "desc":
		q.Desc = true
	default:
		return q, inspect.Invalid("order", `order must be "asc" or "desc"`)
	}
	if l := c.QueryParam("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > maxPageSize {
			return q, inspect.Invalid("limit", fmt.Sprintf("limit must be a whole number from 1 to %d", maxPageSize))
		}
		q.Limit = n
	}
	if cur := c.QueryParam("cursor"); cur != "" {
		// A cursor is a name's worth of text: a longer one is not decoded.
		var k *listing.Key
		err := errors.New("too long")
		if len(cur) <= 4*store.MaxNameLen {
			k, err = listing.DecodeCursor(cur)
		}
		if err != nil {
			return q, inspect.Invalid("cursor", "cursor is not one this console issued; start again from the first page")
		}
		q.Cursor, q.After = cur, k
	}
	return q, nil
}

// listOf is the page of a snapshot list the request asks for (?match=,
// ?kind=, ?sort=, ?order=, ?limit=, ?cursor=), cut by page.
func listOf[T any](s *Server, c echo.Context, sorts []string, kinds []inspect.Kind,
	page func(*live.Snapshot, listing.Query) listing.Page[T]) (*live.Snapshot, listing.Query, listing.Page[T], error) {
	q, err := parseListQuery(c, sorts, kinds)
	if err != nil {
		return nil, q, listing.Page[T]{}, err
	}
	sn, err := s.snapshotFor()
	if err != nil {
		return nil, q, listing.Page[T]{}, err
	}
	return sn, q, page(sn, q), nil
}

func kindList(kinds []inspect.Kind) string {
	s := make([]string, len(kinds))
	for i, k := range kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// historySpanParam is ?span=, "1h" when absent; history checks the value.
func historySpanParam(c echo.Context) string {
	if v := c.QueryParam("span"); v != "" {
		return v
	}
	return history.SpanHour
}

// decodeJSON reads one JSON object from the body into v. Unknown fields are
// refused, so a misspelt field cannot be silently ignored.
func decodeJSON(c echo.Context, v any) error {
	dec := json.NewDecoder(c.Request().Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if dec.Decode(&struct{}{}) != io.EOF {
			return inspect.Invalid("", "request body must hold exactly one JSON object")
		}
		return nil
	}
	var (
		tooBig *echo.HTTPError // BodyLimit's, returned by the body's Read
		se     *json.SyntaxError
		te     *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &tooBig) && tooBig.Code == http.StatusRequestEntityTooLarge:
		return err // toHTTPError's 413
	case errors.Is(err, io.EOF):
		return inspect.Invalid("", "request body is empty; expected a JSON object")
	case errors.As(err, &se), errors.Is(err, io.ErrUnexpectedEOF):
		return inspect.Invalid("", "request body is not valid JSON")
	case errors.As(err, &te):
		if te.Field == "" {
			return inspect.Invalid("", "request body must be a JSON object")
		}
		return inspect.Invalid(te.Field, fmt.Sprintf("%s must be a %s", te.Field, jsonTypeName(te.Type.Kind().String())))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return inspect.Invalid(field, fmt.Sprintf("unknown field %q", field))
	}
	return inspect.Invalid("", "request body is not valid JSON")
}

func jsonTypeName(kind string) string {
	switch {
	case strings.HasPrefix(kind, "float"), strings.HasPrefix(kind, "int"):
		return "number"
	case kind == "string":
		return "string"
	}
	return kind
}

// errSampleFailed is the cause logged for a list refused because the
// sampler's last tick could not read Redis.
var errSampleFailed = errors.New("web: the sampler's last tick failed")

// snapshotFor is the sampler's snapshot for a list. Lists never read Redis
// themselves: before the first tick there is nothing to show yet, and the
// answer says so rather than scanning the keyspace per request.
func (s *Server) snapshotFor() (*live.Snapshot, error) {
	sn := s.live.Latest()
	if sn == nil {
		return nil, inspect.Errorf(inspect.CodeUnavailable, "the console is still discovering objects in Redis; try again in a moment")
	}
	if !sn.RedisUp {
		// Stale rows would show leases counting down on locks that may be
		// long gone; the page says why instead.
		return nil, &inspect.Error{Code: inspect.CodeUnavailable,
			Message: "Redis is not answering; the lists come back when it does", Err: errSampleFailed}
	}
	return sn, nil
}

// staticRoutes serves the embedded stylesheet and script (directory paths
// are not listed) and the icon.
func (s *Server) staticRoutes(e *echo.Echo) {
	e.GET("/favicon.ico", s.handleFavicon)
	e.GET(views.StaticPrefix+"*", func(c echo.Context) error {
		p := c.Param("*")
		if p == "" || strings.HasSuffix(p, "/") || strings.Contains(p, "..") {
			return inspect.Errorf(inspect.CodeNotFound, "no such file")
		}
		if fi, err := fs.Stat(static.FS, p); err != nil || fi.IsDir() {
			return inspect.Errorf(inspect.CodeNotFound, "no such file")
		}
		c.Response().Header().Set("Cache-Control", "no-cache")
		http.ServeFileFS(c.Response(), c.Request(), static.FS, p)
		return nil
	})
}

// handleFavicon answers the browser's automatic /favicon.ico request with
// the embedded icon, so no page logs a 404 for it.
func (s *Server) handleFavicon(c echo.Context) error {
	b, err := fs.ReadFile(static.FS, "favicon.svg")
	if err != nil {
		return c.NoContent(http.StatusNoContent)
	}
	c.Response().Header().Set("Cache-Control", "max-age=86400")
	return c.Blob(http.StatusOK, "image/svg+xml", b)
}

package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/admin"
	"github.com/lockwarden/lockwarden/web/events"
)

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

// handleAPILocks is one page of the snapshot's locks:
// {"locks": [...], "total": N, "next_cursor": "..."} ("" on the last page).
func (s *Server) handleAPILocks(c echo.Context) error {
	sn, _, p, err := s.lockList(c)
	if err != nil {
		return err
	}
	out := make([]lockJSON, 0, len(p.Rows))
	for _, l := range p.Rows {
		j := toLockJSON(s.annotated(l))
		j.lockWaitJSON = lockWaitFor(sn, l.Name, false)
		out = append(out, j)
	}
	return c.JSON(http.StatusOK, map[string]any{"locks": out, "total": p.Total, "next_cursor": p.Next})
}

func (s *Server) handleAPILock(c echo.Context) error {
	name, err := nameParam(c)
	if err != nil {
		return err
	}
	l, err := s.insp.GetLock(c.Request().Context(), name)
	if err != nil {
		return inspect.ObjectError("lock", name, err)
	}
	l.Subscribers = s.live.Latest().Subscribers(name)
	j := toLockDetailJSON(s.annotated(*l))
	j.lockWaitJSON = lockWaitFor(s.live.Latest(), name, true)
	return c.JSON(http.StatusOK, j)
}

func (s *Server) handleAPIForceUnlock(c echo.Context) error {
	name, err := nameParam(c)
	if err != nil {
		return err
	}
	// A missing field reads as "", which is refused like an empty one.
	var body struct {
		Holder string `json:"holder"`
		Reason string `json:"reason"`
	}
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	if _, err := s.forceUnlock(c, admin.ForceUnlock{Name: name, Holder: body.Holder, Reason: body.Reason}); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]bool{"released": true})
}

// handleAPILimiters is one page of the snapshot's limiters, shaped like
// handleAPILocks.
func (s *Server) handleAPILimiters(c echo.Context) error {
	sn, _, p, err := s.limiterList(c)
	if err != nil {
		return err
	}
	out := make([]limiterJSON, 0, len(p.Rows))
	for _, l := range p.Rows {
		out = append(out, toLimiterJSON(l, sn.Window(l.Name)))
	}
	return c.JSON(http.StatusOK, map[string]any{"limiters": out, "total": p.Total, "next_cursor": p.Next})
}

// limiterWithWindow reads one limiter and its current window.
func (s *Server) limiterWithWindow(c echo.Context, name string) (*inspect.LimiterInfo, inspect.Counts, error) {
	ctx := c.Request().Context()
	l, err := s.insp.GetLimiter(ctx, name)
	if err != nil {
		return nil, inspect.Counts{}, inspect.ObjectError("limiter", name, err)
	}
	smp, err := s.insp.Sample(ctx, nil, []string{name})
	if err != nil {
		return nil, inspect.Counts{}, err
	}
	return l, smp.Stats[name].Window, nil
}

func (s *Server) handleAPILimiter(c echo.Context) error {
	name, err := nameParam(c)
	if err != nil {
		return err
	}
	l, w, err := s.limiterWithWindow(c, name)
	if err != nil {
		return err
	}
	out := toLimiterJSON(*l, w)
	if l.Kind == inspect.KindRedissonLimiter && l.PerClient {
		if out.Clients, err = s.insp.RedissonClients(c.Request().Context(), name); err != nil {
			return err
		}
		if out.Clients == nil {
			out.Clients = []inspect.ClientWindow{}
		}
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) handleAPIModifyLimiter(c echo.Context) error {
	name, err := nameParam(c)
	if err != nil {
		return err
	}
	var body struct {
		Rate       *float64 `json:"rate"`
		IntervalMS *float64 `json:"interval_ms"`
		// KeepState applies to Redisson limiters: false (the default, as
		// Redisson's setRate) restarts the windows, true keeps the grants.
		KeepState *bool `json:"keep_state"`
	}
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	edit, err := rateBody{Rate: body.Rate, IntervalMS: body.IntervalMS}.check()
	if err != nil {
		return err
	}
	edit.Name, edit.KeepState = name, body.KeepState != nil && *body.KeepState
	l, err := s.admin.ModifyLimiter(c.Request().Context(), s.actor(c), edit)
	recorded(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toLimiterJSON(*l, s.live.Latest().Window(name)))
}

// rateBody is the rate and interval a limiter edit and a what-if take.
type rateBody struct {
	Rate       *float64 `json:"rate"`
	IntervalMS *float64 `json:"interval_ms"`
}

// check says which field is missing or wrong, as admin.CheckEdit does.
func (b rateBody) check() (admin.LimiterEdit, error) {
	if b.Rate == nil {
		return admin.LimiterEdit{}, inspect.Invalid("rate", "rate is required")
	}
	if b.IntervalMS == nil {
		return admin.LimiterEdit{}, inspect.Invalid("interval_ms", "interval_ms is required")
	}
	return admin.CheckEdit(*b.Rate, *b.IntervalMS)
}

// handleAPIResetCounter takes no body (an empty JSON object is accepted).
func (s *Server) handleAPIResetCounter(c echo.Context) error {
	name, err := nameParam(c)
	if err != nil {
		return err
	}
	if c.Request().ContentLength > 0 {
		var body struct{}
		if err := decodeJSON(c, &body); err != nil {
			return err
		}
	}
	err = s.admin.ResetCounter(c.Request().Context(), s.actor(c), admin.ResetCounter{Name: name})
	recorded(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]bool{"reset": true})
}

type statsJSON struct {
	BucketMS int                       `json:"bucket_ms"`
	WindowMS int                       `json:"window_ms"`
	At       int64                     `json:"at"`
	Limiters map[string]inspect.Counts `json:"limiters"`
	Locks    map[string]inspect.Counts `json:"locks"`
}

func (s *Server) handleAPIStats(c echo.Context) error {
	out := statsJSON{BucketMS: inspect.BucketMS, WindowMS: inspect.WindowMS,
		Limiters: map[string]inspect.Counts{}, Locks: map[string]inspect.Counts{}}
	sn := s.live.Latest()
	if sn == nil || sn.At == 0 {
		out.At = time.Now().UnixMilli() / inspect.BucketMS * inspect.BucketMS
	} else {
		out.At = sn.At
		for _, l := range sn.Limiters {
			out.Limiters[l.Name] = sn.Window(l.Name)
		}
		for _, l := range sn.Locks {
			out.Locks[l.Name] = sn.Window(l.Name)
		}
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) handleAPIEvents(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{"events": s.events.Recent(events.LogSize)})
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

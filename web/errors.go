package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"

	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/inspect/whatif"
	"github.com/lockwarden/lockwarden/web/admin"
	"github.com/lockwarden/lockwarden/web/auth"
	"github.com/lockwarden/lockwarden/web/history"
)

// httpError is the one error type handlers return for anything the client
// should see. Every other error reaching Echo is converted by toHTTPError,
// the single place where causes become statuses.
type httpError struct {
	Status  int
	Message string
	// Field names the input at fault for 400s, so forms can show the
	// message next to it.
	Field string
	// Holders are the current holders of a lock after a lost force-unlock
	// race (409).
	Holders []inspect.Holder
	// Err is the cause; logged for 5xx, never shown.
	Err error
}

func (e *httpError) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *httpError) Unwrap() error { return e.Err }

func badRequest(field, msg string) *httpError {
	return &httpError{Status: http.StatusBadRequest, Field: field, Message: msg}
}

func notFound(msg string) *httpError {
	return &httpError{Status: http.StatusNotFound, Message: msg}
}

// toHTTPError maps any error to what the client sees.
func toHTTPError(err error) *httpError {
	var he *httpError
	if errors.As(err, &he) {
		return he
	}
	var oe *admin.ObjectError
	if errors.As(err, &oe) {
		he := *toHTTPError(oe.Err)
		if he.Status == http.StatusNotFound || he.Status == http.StatusConflict {
			he.Message, he.Holders, he.Err = oe.Error(), oe.Holders, err
		}
		return &he
	}
	var ie *admin.InputError
	if errors.As(err, &ie) {
		return &httpError{Status: http.StatusBadRequest, Field: ie.Field, Message: ie.Message}
	}
	var ar *auth.Refusal
	if errors.As(err, &ar) {
		status := http.StatusForbidden
		switch {
		case errors.Is(ar, auth.ErrUnauthenticated):
			status = http.StatusUnauthorized
		case errors.Is(ar, auth.ErrTooManyFailures):
			status = http.StatusTooManyRequests
		case errors.Is(ar, auth.ErrUnavailable):
			status = http.StatusServiceUnavailable
		}
		return &httpError{Status: status, Message: ar.Message, Err: ar.Err}
	}
	if errors.Is(err, admin.ErrAuditUnavailable) {
		return &httpError{Status: http.StatusServiceUnavailable, Message: admin.ErrAuditUnavailable.Error(), Err: err}
	}
	var ve *store.ValidationError
	if errors.As(err, &ve) {
		return &httpError{Status: http.StatusBadRequest, Field: ve.Field, Message: ve.Field + " " + ve.Message, Err: err}
	}
	var pe *history.ParamError
	if errors.As(err, &pe) {
		return &httpError{Status: http.StatusBadRequest, Field: pe.Param, Message: fmt.Sprintf("%s must be %s", pe.Param, pe.Want), Err: err}
	}
	if errors.Is(err, whatif.ErrBusy) {
		return &httpError{Status: http.StatusServiceUnavailable, Message: whatif.ErrBusy.Error(), Err: err}
	}
	if errors.Is(err, whatif.ErrUnsupported) {
		return &httpError{Status: http.StatusUnprocessableEntity,
			Message: "this limiter cannot be replayed: a per-client limiter's demand is not recorded per client", Err: err}
	}
	var ee *echo.HTTPError
	if errors.As(err, &ee) {
		msg := http.StatusText(ee.Code)
		if m, ok := ee.Message.(string); ok && ee.Code < 500 {
			msg = m
		}
		if ee.Code == http.StatusRequestEntityTooLarge {
			msg = "request body too large (limit 64 KiB)"
		}
		return &httpError{Status: ee.Code, Message: msg, Err: err}
	}
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrModify):
		return &httpError{Status: http.StatusNotFound, Message: "not found", Err: err}
	case errors.Is(err, store.ErrWrongKind):
		return &httpError{Status: http.StatusNotFound, Message: "the key holds a different kind of object", Err: err}
	case errors.Is(err, inspect.ErrHolderChanged):
		return &httpError{Status: http.StatusConflict, Message: "the lock is no longer held by that holder; nothing was changed", Err: err}
	case errors.Is(err, store.ErrUncertain):
		// The script went out once and no reply came back: it ran or it
		// did not. Saying so is the only honest answer; a retry could apply
		// the change twice.
		return &httpError{Status: http.StatusGatewayTimeout, Message: "Redis did not answer: the change may or may not have been applied; reload the object before trying again", Err: err}
	case errors.Is(err, context.DeadlineExceeded):
		return &httpError{Status: http.StatusServiceUnavailable, Message: "Redis did not answer in time", Err: err}
	case isNetError(err):
		return &httpError{Status: http.StatusServiceUnavailable, Message: "Redis is not answering", Err: err}
	}
	return &httpError{Status: http.StatusInternalServerError, Message: "internal error", Err: err}
}

// wantsJSON decides the error format: /api/* is always JSON; elsewhere a
// client that asks for JSON and not HTML gets JSON.
func wantsJSON(c echo.Context) bool {
	if strings.HasPrefix(c.Request().URL.Path, "/api/") {
		return true
	}
	accept := c.Request().Header.Get(echo.HeaderAccept)
	return strings.Contains(accept, "application/json") && !strings.Contains(accept, "text/html")
}

type jsonError struct {
	Error   string           `json:"error"`
	Field   string           `json:"field,omitempty"`
	Holders []inspect.Holder `json:"holders,omitempty"`
}

// handleError is Echo's HTTPErrorHandler.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	// observe logs the failure with its cause and the request ID.
	he := toHTTPError(err)
	if he.Status == http.StatusUnauthorized {
		c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="lockwarden"`)
	}
	var werr error
	switch {
	case c.Request().Method == http.MethodHead:
		werr = c.NoContent(he.Status)
	case wantsJSON(c):
		werr = c.JSON(he.Status, jsonError{Error: he.Message, Field: he.Field, Holders: he.Holders})
	default:
		werr = s.renderErrorPage(c, he)
	}
	if werr != nil {
		s.reqLog(c).Warn("writing error response", "err", werr)
	}
}

// isNetError reports a failure to reach Redis (refused, reset, timed out,
// or the connection closed mid-reply when the server went away), which a
// retry may cure, unlike a bug.
func isNetError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, redis.ErrClosed) || errors.Is(err, redis.ErrPoolTimeout)
}

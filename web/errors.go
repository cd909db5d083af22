package web

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// httpError is what the client is shown of an error: toHTTPError's
// answer, the one place where errors become statuses. Handlers return
// *inspect.Error (or store's and Redis's errors, which inspect.ErrorOf
// maps), never an httpError.
type httpError struct {
	Status  int
	Message string
	// Field names the input at fault for 400s, so forms can show the
	// message next to it.
	Field string
	// Holders are the current holders of a lock after a lost force-unlock
	// race (409; withHolders).
	Holders []inspect.Holder
	// Err is the cause; logged for 5xx, never shown.
	Err error
}

// statusOf is the HTTP status of each console error code.
var statusOf = map[inspect.Code]int{
	inspect.CodeInvalid:      http.StatusBadRequest,
	inspect.CodeUnauthorized: http.StatusUnauthorized,
	inspect.CodeForbidden:    http.StatusForbidden,
	inspect.CodeNotFound:     http.StatusNotFound,
	inspect.CodeConflict:     http.StatusConflict,
	inspect.CodeUnsupported:  http.StatusUnprocessableEntity,
	inspect.CodeLimited:      http.StatusTooManyRequests,
	inspect.CodeInternal:     http.StatusInternalServerError,
	inspect.CodeUnavailable:  http.StatusServiceUnavailable,
	inspect.CodeUncertain:    http.StatusGatewayTimeout,
}

// toHTTPError maps any error to what the client sees: by its code, or
// Echo's own status for what Echo refused (no route, wrong method, a body
// over bodyLimit).
func toHTTPError(err error) *httpError {
	var ce *inspect.Error
	var ee *echo.HTTPError
	if !errors.As(err, &ce) && errors.As(err, &ee) {
		msg := http.StatusText(ee.Code)
		if m, ok := ee.Message.(string); ok && ee.Code < 500 {
			msg = m
		}
		if ee.Code == http.StatusRequestEntityTooLarge {
			msg = "request body too large (limit 64 KiB)"
		}
		return &httpError{Status: ee.Code, Message: msg, Err: err}
	}
	e := inspect.ErrorOf(err)
	status, ok := statusOf[e.Code]
	if !ok {
		status = http.StatusInternalServerError
	}
	he := &httpError{Status: status, Message: e.Message, Field: e.Field, Err: err}
	var held *heldError
	if errors.As(err, &held) {
		he.Holders = held.holders
	}
	return he
}

// heldError is a lost force-unlock race with the lock's holders now,
// which the 409 page and JSON list.
type heldError struct {
	err     error
	holders []inspect.Holder
}

func (e *heldError) Error() string { return e.err.Error() }

func (e *heldError) Unwrap() error { return e.err }

// withHolders attaches a lock's holders to err (a conflict).
func withHolders(err error, holders []inspect.Holder) error {
	if holders == nil {
		holders = []inspect.Holder{}
	}
	return &heldError{err: err, holders: holders}
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

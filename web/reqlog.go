package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/lockwarden/lockwarden/store/inspect"
)

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

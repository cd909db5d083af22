// Package fault is the console's one error type. Its parts (web/admin,
// web/auth, web/history, whatif) return an *Error whose Code says what kind
// of failure it is; the web layer answers each Code with one HTTP status and
// shows Message. store keeps its sentinel errors for applications: ErrorOf
// maps them, and Redis not answering, to codes here and nowhere else.
package fault

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/internal/wire"
)

// ErrHolderChanged: a force-unlock named a holder that no longer holds the
// lock; nothing was changed.
var ErrHolderChanged = errors.New("inspect: lock holder changed")

// Code is the kind of a console failure.
type Code string

const (
	// CodeInternal: a bug or a reply nobody expected (500).
	CodeInternal Code = "internal"
	// CodeInvalid: the input is wrong (Field names it); nothing was
	// changed (400).
	CodeInvalid Code = "invalid"
	// CodeUnauthorized: not signed in, or a wrong token (401).
	CodeUnauthorized Code = "unauthorized"
	// CodeForbidden: the caller is known but may not do this (403).
	CodeForbidden Code = "forbidden"
	// CodeNotFound: no such object as the action's kind, or outside the
	// console's --match (404).
	CodeNotFound Code = "not_found"
	// CodeConflict: the object changed since the caller read it; nothing
	// was changed (409).
	CodeConflict Code = "conflict"
	// CodeUnsupported: the input is valid, but this object cannot do it
	// (422).
	CodeUnsupported Code = "unsupported"
	// CodeLimited: too many attempts or connections from the caller; try
	// again after RetryAfter, when set (429).
	CodeLimited Code = "limited"
	// CodeUnavailable: Redis, or the console's state in it, cannot be
	// reached; nothing was changed (503).
	CodeUnavailable Code = "unavailable"
	// CodeUncertain: a change went out once and no reply came back: it
	// may or may not have been applied, and it is not sent again (504).
	CodeUncertain Code = "uncertain"
)

// Error is a console failure as its client is told about it.
type Error struct {
	Code Code
	// Field is the input at fault (CodeInvalid), so a form can show
	// Message next to it.
	Field string
	// Message is what the client is shown.
	Message string
	// RetryAfter is how long a CodeLimited caller must wait; 0 when
	// unknown.
	RetryAfter time.Duration
	// Err is the cause: logged, never shown.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf is an *Error of code with a formatted message and no cause.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalid is a CodeInvalid *Error naming field.
func Invalid(field, message string) *Error {
	return &Error{Code: CodeInvalid, Field: field, Message: message}
}

// ErrorOf is err as the console reports it: the *Error in its chain as it
// is; store's sentinels, ErrHolderChanged, and Redis that does not answer
// mapped to their codes; anything else CodeInternal ("internal error").
// nil for nil.
func ErrorOf(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var ve *store.ValidationError
	switch {
	case errors.As(err, &ve):
		return &Error{Code: CodeInvalid, Field: ve.Field, Message: ve.Field + " " + ve.Message, Err: err}
	case errors.Is(err, wire.ErrNotFound), errors.Is(err, store.ErrModify):
		return &Error{Code: CodeNotFound, Message: "not found", Err: err}
	case errors.Is(err, store.ErrWrongKind):
		return &Error{Code: CodeNotFound, Message: "the key holds a different kind of object", Err: err}
	case errors.Is(err, ErrHolderChanged):
		return &Error{Code: CodeConflict, Message: "the lock is no longer held by that holder; nothing was changed", Err: err}
	case errors.Is(err, store.ErrUncertain):
		// A retry could apply the change twice: saying so is the only
		// honest answer.
		return &Error{Code: CodeUncertain, Err: err,
			Message: "Redis did not answer: the change may or may not have been applied; reload the object before trying again"}
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Code: CodeUnavailable, Message: "Redis did not answer in time", Err: err}
	case RedisUnreachable(err):
		return &Error{Code: CodeUnavailable, Message: "Redis is not answering", Err: err}
	}
	return &Error{Code: CodeInternal, Message: "internal error", Err: err}
}

// CodeOf is ErrorOf(err).Code; "" for nil.
func CodeOf(err error) Code {
	if e := ErrorOf(err); e != nil {
		return e.Code
	}
	return ""
}

// ObjectError is ErrorOf(err) for an action on the object name of kind
// what ("lock", "limiter", "counter"), its message naming the object when
// it is missing or has changed; nil for nil.
func ObjectError(what, name string, err error) error {
	e := ErrorOf(err)
	if e == nil {
		return nil
	}
	switch e.Code {
	case CodeNotFound:
		return &Error{Code: e.Code, Message: fmt.Sprintf("no %s named %q", what, name), Err: err}
	case CodeConflict:
		return &Error{Code: e.Code, Message: fmt.Sprintf("%s %q is no longer held by that holder; nothing was changed", what, name), Err: err}
	}
	return e
}

// RedisUnreachable reports a failure to reach Redis (refused, reset, timed
// out, or the connection closed mid-reply when the server went away),
// which a retry may cure, unlike a bug.
func RedisUnreachable(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, redis.ErrClosed) || errors.Is(err, redis.ErrPoolTimeout)
}

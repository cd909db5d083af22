package auth

import (
	"errors"
	"fmt"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// Every refusal is an *inspect.Error whose cause matches one of these with
// errors.Is: ErrUnauthenticated (CodeUnauthorized), ErrForbidden
// (CodeForbidden), ErrTooManyFailures (CodeLimited, with RetryAfter),
// ErrUnavailable (CodeUnavailable).
var (
	ErrUnauthenticated = errors.New("auth: not signed in")
	ErrForbidden       = errors.New("auth: refused")
	// ErrTooManyFailures: the source (or everyone) guessed too often and
	// must wait RetryAfter before any token of its is checked.
	ErrTooManyFailures = errors.New("auth: too many failed sign-ins")
	// ErrUnavailable: the sign-in state in Redis could not be read or
	// written, so nobody can be identified; nothing was checked.
	ErrUnavailable = errors.New("auth: sign-in state unavailable")
)

func unauthenticated(msg string) *inspect.Error {
	return &inspect.Error{Code: inspect.CodeUnauthorized, Message: msg, Err: ErrUnauthenticated}
}

func forbidden(msg string) *inspect.Error {
	return &inspect.Error{Code: inspect.CodeForbidden, Message: msg, Err: ErrForbidden}
}

func tooManyFailures(wait time.Duration) *inspect.Error {
	secs := int64((wait + time.Second - 1) / time.Second)
	return &inspect.Error{Code: inspect.CodeLimited, RetryAfter: time.Duration(secs) * time.Second, Err: ErrTooManyFailures,
		Message: fmt.Sprintf("too many wrong tokens from this address; try again in %d s", secs)}
}

func unavailable(err error) *inspect.Error {
	return &inspect.Error{Code: inspect.CodeUnavailable, Err: fmt.Errorf("%w: %w", ErrUnavailable, err),
		Message: "the console cannot read its sign-in state from Redis; try again when Redis answers"}
}

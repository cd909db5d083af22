package auth

import (
	"errors"
	"fmt"
	"time"
)

// The kinds of refusal, for errors.Is: the web package answers
// ErrUnauthenticated with 401, ErrForbidden with 403, ErrTooManyFailures
// with 429 and Retry-After, ErrUnavailable with 503.
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

// Refusal is a request the console will not serve, with the words the
// client is shown.
type Refusal struct {
	Kind    error // ErrUnauthenticated or ErrForbidden
	Message string
	Err     error // the cause, if any; never shown
	// RetryAfter is how long to wait, for ErrTooManyFailures.
	RetryAfter time.Duration
}

func (r *Refusal) Error() string { return r.Message }

// Is matches the refusal's kind.
func (r *Refusal) Is(target error) bool { return target == r.Kind }

func (r *Refusal) Unwrap() error { return r.Err }

func unauthenticated(msg string) *Refusal { return &Refusal{Kind: ErrUnauthenticated, Message: msg} }

func forbidden(msg string) *Refusal { return &Refusal{Kind: ErrForbidden, Message: msg} }

func tooManyFailures(wait time.Duration) *Refusal {
	secs := int64((wait + time.Second - 1) / time.Second)
	return &Refusal{Kind: ErrTooManyFailures, RetryAfter: time.Duration(secs) * time.Second,
		Message: fmt.Sprintf("too many wrong tokens from this address; try again in %d s", secs)}
}

func unavailable(err error) *Refusal {
	return &Refusal{Kind: ErrUnavailable, Err: err,
		Message: "the console cannot read its sign-in state from Redis; try again when Redis answers"}
}

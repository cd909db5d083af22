package auth

import "errors"

// The kinds of refusal, for errors.Is: the web package answers
// ErrUnauthenticated with 401 and ErrForbidden with 403.
var (
	ErrUnauthenticated = errors.New("auth: not signed in")
	ErrForbidden       = errors.New("auth: refused")
)

// Refusal is a request the console will not serve, with the words the
// client is shown.
type Refusal struct {
	Kind    error // ErrUnauthenticated or ErrForbidden
	Message string
	Err     error // the cause, if any; never shown
}

func (r *Refusal) Error() string { return r.Message }

// Is matches the refusal's kind.
func (r *Refusal) Is(target error) bool { return target == r.Kind }

func (r *Refusal) Unwrap() error { return r.Err }

func unauthenticated(msg string) *Refusal { return &Refusal{Kind: ErrUnauthenticated, Message: msg} }

func forbidden(msg string) *Refusal { return &Refusal{Kind: ErrForbidden, Message: msg} }

package store

import (
	"errors"
	"fmt"
)

// Sentinel errors. Callers test them with errors.Is; the console maps them to
// HTTP statuses in one place.
var (
	// ErrNotObtained: the lock is held by someone else (TryLock, or Lock
	// when ctx ends first), or Lock could not wait for it (its unlock
	// channel subscription failed; the cause is wrapped), or Redis refused
	// the acquire before it wrote anything (LOADING, OOM, READONLY, BUSY,
	// ...; the reply is wrapped). The caller holds nothing.
	ErrNotObtained = errors.New("store: lock not obtained")
	// ErrNotHeld: Unlock or Refresh by a caller that does not hold the lock.
	// The lock is left untouched.
	ErrNotHeld = errors.New("store: lock not held by this owner")
	// ErrNotFound: no lock or limiter of a known kind at that name.
	ErrNotFound = errors.New("store: not found")
	// ErrNotConfigured: a limiter acquire on a key with no limiter (seed 001's
	// NO_LIMIT); the caller decides whether that means "allow".
	ErrNotConfigured = errors.New("store: limiter not configured")
	// ErrModify: modify of a limiter that does not exist (seed 001's
	// MODIFY_ERROR, "re-initialise it").
	ErrModify = errors.New("store: limiter modify failed: not initialised")
	// ErrWrongKind: the key exists but holds something else (another kind
	// of object, or an application's own data).
	ErrWrongKind = errors.New("store: key holds a different kind of object")
	// ErrUncertain: a call that changes state got no reply (timeout,
	// dropped connection, ctx ended while it was on the wire), so it may or
	// may not have been applied. It is never re-sent for you; the error is
	// an *UncertainError wrapping the cause. Acquires that may have taken
	// something withdraw it before returning (see the package doc).
	ErrUncertain = errors.New("store: outcome unknown (no reply from Redis)")
	// ErrNotReplicated: a lock write that fewer replicas than
	// Options.ReplicaAcks confirmed in time (a *ReplicationError). A grant
	// is then withdrawn and the error also matches ErrNotObtained; a
	// renewal or release was applied on the master.
	ErrNotReplicated = errors.New("store: not confirmed by replicas")
	// ErrInvalid is matched by every *ValidationError.
	ErrInvalid = errors.New("store: invalid input")
)

// ValidationError says which input is wrong and why. Nothing was sent to
// Redis when one is returned.
type ValidationError struct {
	Field   string // the parameter or form field name, e.g. "rate"
	Message string // human readable, e.g. "must be at least 1"
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("store: invalid %s: %s", e.Field, e.Message)
}

// Is makes errors.Is(err, ErrInvalid) true for every validation error.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// Invalid builds a ValidationError; store/inspect uses it too, so the
// console maps every validation error with one errors.Is(err, ErrInvalid).
func Invalid(field, format string, args ...any) error {
	return &ValidationError{Field: field, Message: fmt.Sprintf(format, args...)}
}

func invalid(field, format string, args ...any) error { return Invalid(field, format, args...) }

// MaxNameLen bounds object names accepted from callers (Redis allows 512 MB;
// a console does not need to).
const MaxNameLen = 1024

// ValidateName applies MaxNameLen and refuses an empty name; the console
// checks names it is given with the same rule.
func ValidateName(name string) error {
	switch {
	case name == "":
		return invalid("name", "must not be empty")
	case len(name) > MaxNameLen:
		return invalid("name", "must be at most %d bytes, got %d", MaxNameLen, len(name))
	}
	return nil
}

func validateName(name string) error { return ValidateName(name) }

package store

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
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
	// ErrNotConfigured: a limiter acquire on a key with no limiter (the
	// token bucket's code 0, BucketNoLimit); the caller decides whether that
	// means "allow".
	ErrNotConfigured = errors.New("store: limiter not configured")
	// ErrModify: modify of a limiter that does not exist (the token
	// bucket's code -2, BucketModifyError): initialise it first.
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
	// renewal was applied on the master.
	ErrNotReplicated = errors.New("store: not confirmed by replicas")
	// ErrInvalid is matched by every *ValidationError.
	ErrInvalid = errors.New("store: invalid input")
	// ErrCorrupt: a token bucket's fields cannot be used (not numbers,
	// interval <= 0, ...). The attempt was counted as an error in the
	// stats; a limiter edit from the console repairs the bucket.
	ErrCorrupt = errors.New("store: token bucket is corrupt")
	// ErrRateLimited: a limiter's Acquire gave up because ctx ended, or its
	// deadline comes before the permits would. The error also matches
	// ctx's error.
	ErrRateLimited = errors.New("store: rate limited")
	// ErrRedissonMode: a fixed-window (RedissonFixed) handle found a
	// limiter kept by a sliding-window Redisson (3.13.3 and later): its
	// value key has no expiry, so a fixed window would never end. Nothing
	// was changed; use the Redisson version's mode.
	ErrRedissonMode = errors.New("store: redisson limiter is kept in another mode")
)

// ErrNotFound is no lock or limiter of a known kind at a name. No call of
// store returns it; the console's (package store/inspect) do.
//
// Deprecated: use inspect.ErrNotFound, which it is.
var ErrNotFound = wire.ErrNotFound

// LockedError reports that another holder has the lock. It matches
// ErrNotObtained with errors.Is.
type LockedError struct {
	Name string
	// TTL is the remaining lease of the current holder; negative when the
	// lock has no expiry (written by a client that set none).
	TTL time.Duration
}

func (e *LockedError) Error() string {
	if e.TTL < 0 {
		return fmt.Sprintf("%v: %q is held by another owner (no expiry)", ErrNotObtained, e.Name)
	}
	return fmt.Sprintf("%v: %q is held by another owner for %v more", ErrNotObtained, e.Name, e.TTL)
}

func (e *LockedError) Unwrap() error { return ErrNotObtained }

// UncertainError is a script call that got no reply: it may or may not
// have been applied. It matches ErrUncertain and the network or context
// error with errors.Is.
type UncertainError struct{ Err error }

func (e *UncertainError) Error() string { return fmt.Sprintf("%v: %v", ErrUncertain, e.Err) }

// Is makes errors.Is(err, ErrUncertain) true.
func (e *UncertainError) Is(target error) bool { return target == ErrUncertain }

func (e *UncertainError) Unwrap() error { return e.Err }

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

func invalid(field, format string, args ...any) error {
	return &ValidationError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// MaxNameLen bounds object names accepted from callers (Redis allows 512 MB;
// a console does not need to).
const MaxNameLen = wire.MaxNameLen

// validateName refuses an empty name and one longer than MaxNameLen, as the
// console does (wire.CheckName).
func validateName(name string) error {
	if field, msg := wire.CheckName(name); field != "" {
		return &ValidationError{Field: field, Message: msg}
	}
	return nil
}

// ReplicationError is a lock write that fewer replicas than required
// confirmed within the timeout (or whose WAIT got no reply). It matches
// ErrNotReplicated with errors.Is.
type ReplicationError struct {
	Want, Got int
	// Err is set when the WAIT itself failed (no reply, an error reply).
	Err error
}

func (e *ReplicationError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%v: waiting for %d: %v", ErrNotReplicated, e.Want, e.Err)
	}
	return fmt.Sprintf("%v: %d of %d confirmed in time", ErrNotReplicated, e.Got, e.Want)
}

// Is makes errors.Is(err, ErrNotReplicated) true.
func (e *ReplicationError) Is(target error) bool { return target == ErrNotReplicated }

func (e *ReplicationError) Unwrap() error { return e.Err }

// isWrongType reports a WRONGTYPE reply, also as Redis before 7 wraps it
// when a script's redis.call hits it ("ERR Error running script ...").
func isWrongType(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.Contains(re.Error(), "WRONGTYPE")
}

// Package admin is what the console changes in Redis: force-unlock,
// release-all, limiter edits and counter resets, each checked, run once as
// the store's script, recorded in the audit stream with the state before
// and after, and handed to the live view so the next read shows it.
//
// It is a plain Go API: every action takes a context, the Actor who asks
// and a typed request, and returns a result or an *inspect.Error
// (errors.go); nothing in it knows HTTP. It imports store/inspect only.
package admin

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// Actions as the audit stream names them.
const (
	ActionForceUnlock = "force-unlock"
	ActionReleaseAll  = "release-all"
	ActionDropWaiters = "drop-waiters"
	ActionModify      = "modify"
	ActionReset       = "reset"
	ActionSignIn      = "sign-in"
	ActionSignOut     = "sign-out"
)

// auditWriteTimeout bounds an append: the trail is important, but a Redis
// that does not answer must not hold the answer for long.
const auditWriteTimeout = 2 * time.Second

// Actor is who asks for an action, as the audit record names them.
type Actor struct {
	Role        string // "admin", "viewer", "" when anonymous
	Fingerprint string // the token's fingerprint, never the token
	Remote      string // the peer address
	RequestID   string
}

// Live is the console's current view of Redis, which actions read and
// bring up to date.
type Live interface {
	// Holds is what client id holds and waits for, as last read.
	Holds(clientID string) []inspect.Hold
	// Refresh reads the named objects again and publishes them before it
	// returns, so every page and list of the console shows the change
	// from the next request on.
	Refresh(ctx context.Context, locks, limiters []string)
}

// Listener hears of every hold the console broke, once it is broken and
// before the action returns: the event log (and so the viewers), the
// history's mark of how the hold ended.
type Listener interface {
	ForceUnlocked(ctx context.Context, name, holder string, at time.Time)
}

// Config is what a Service needs; Inspector and Audit are required.
type Config struct {
	Inspector *inspect.Inspector
	// Audit is the change trail (inspect.AuditTrail, kept by age).
	Audit *inspect.Audit
	// Refused is the trail of refused requests (nil: they are dropped).
	Refused *RefusedLog
	// InScope says which names the console may act on (its --match);
	// an action on any other name is a missing object. nil: every name.
	InScope func(name string) bool
	Live    Live // nil: no read-your-writes (tests of one action)
	// Listeners are told of each broken hold, in order.
	Listeners []Listener
	Logger    *slog.Logger
}

// Service runs the console's actions.
type Service struct {
	insp      *inspect.Inspector
	audit     *inspect.Audit
	refused   *RefusedLog
	inScope   func(string) bool
	live      Live
	listeners []Listener
	log       *slog.Logger

	auditErrors atomic.Int64
}

// New builds a Service.
func New(cfg Config) *Service {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{insp: cfg.Inspector, audit: cfg.Audit, refused: cfg.Refused, inScope: cfg.InScope,
		live: cfg.Live, listeners: cfg.Listeners, log: log}
}

// Record appends rec, stamped with actor, to the change trail. A failed
// write is logged and counted (AuditErrors); what it records stands. The
// web layer records with it what an admin did that reached no action
// (sign-in, sign-out, an admin's refused input).
func (s *Service) Record(ctx context.Context, actor Actor, rec inspect.AuditRecord) {
	_, _ = s.append(ctx, actor, rec)
}

// Refused records a refused or unauthenticated request in the refused
// trail, throttled per source (RefusedLog); never in the change trail.
func (s *Service) Refused(ctx context.Context, actor Actor, rec inspect.AuditRecord) {
	if s.refused == nil {
		return
	}
	rec.Role, rec.Fingerprint, rec.Remote, rec.RequestID = actor.Role, actor.Fingerprint, actor.Remote, actor.RequestID
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditWriteTimeout)
	defer cancel()
	if err := s.refused.Record(ctx, rec, time.Now()); err != nil {
		s.auditErrors.Add(1)
		s.log.Warn("refused-request record failed", "request_id", actor.RequestID, "action", rec.Action, "err", err)
	}
}

// RefusedLog is the trail of refused requests (nil when none).
func (s *Service) RefusedLog() *RefusedLog { return s.refused }

func (s *Service) append(ctx context.Context, actor Actor, rec inspect.AuditRecord) (string, error) {
	rec.Role, rec.Fingerprint, rec.Remote, rec.RequestID = actor.Role, actor.Fingerprint, actor.Remote, actor.RequestID
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditWriteTimeout)
	defer cancel()
	id, err := s.audit.Append(ctx, rec)
	if err != nil {
		s.auditErrors.Add(1)
		s.log.Error("audit append failed", "request_id", actor.RequestID, "action", rec.Action, "target", rec.Target,
			"outcome", rec.Outcome, "err", err)
	}
	return id, err
}

// intend writes rec as the intent of a change about to be made and
// remembers its ID for the outcome record. An error means the change must
// not be made.
func (s *Service) intend(ctx context.Context, a Actor, rec *inspect.AuditRecord) error {
	r := *rec
	r.Outcome = inspect.OutcomeIntent
	id, err := s.append(ctx, a, r)
	if err != nil {
		return &inspect.Error{Code: inspect.CodeUnavailable, Message: ErrAuditUnavailable.Error(),
			Err: fmt.Errorf("%w: %w", ErrAuditUnavailable, err)}
	}
	rec.Intent = id
	return nil
}

// scoped refuses a name outside the console's --match as missing: the
// console neither shows nor changes it.
func (s *Service) scoped(what, name string) error {
	if s.inScope != nil && !s.inScope(name) {
		return inspect.ObjectError(what, name, inspect.ErrNotFound)
	}
	return nil
}

// Recent is the newest n audit records, newest first.
func (s *Service) Recent(ctx context.Context, n int) ([]inspect.AuditRecord, error) {
	return s.audit.Recent(ctx, n)
}

// Trail is the change trail, for reading it a page at a time.
func (s *Service) Trail() *inspect.Audit { return s.audit }

// AuditKey is the audit stream's key.
func (s *Service) AuditKey() string { return s.audit.Key() }

// AuditErrors counts audit records that could not be written.
func (s *Service) AuditErrors() int64 { return s.auditErrors.Load() }

func (s *Service) refresh(ctx context.Context, locks, limiters []string) {
	if s.live != nil && len(locks)+len(limiters) > 0 {
		s.live.Refresh(ctx, locks, limiters)
	}
}

func (s *Service) unlocked(ctx context.Context, name, holder string) {
	at := time.Now()
	for _, l := range s.listeners {
		l.ForceUnlocked(ctx, name, holder, at)
	}
}

func (s *Service) logger(a Actor) *slog.Logger {
	return s.log.With("request_id", a.RequestID)
}

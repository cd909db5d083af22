package admin

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// MaxReasonLen bounds the reason an admin gives for breaking a lock.
const MaxReasonLen = 500

// FieldReason names the reason in CodeInvalid errors (and in the console's forms).
const FieldReason = "reason"

// CheckReason validates the reason an admin gives for breaking a lock and
// returns it trimmed.
func CheckReason(r string) (string, error) {
	r = strings.TrimSpace(r)
	switch {
	case r == "":
		return "", inspect.Invalid(FieldReason, "reason is required: say why the lock must be broken (it is recorded in the audit trail)")
	case len(r) > MaxReasonLen:
		return "", inspect.Invalid(FieldReason, fmt.Sprintf("reason must be at most %d bytes", MaxReasonLen))
	case !utf8.ValidString(r):
		return "", inspect.Invalid(FieldReason, "reason must be text (UTF-8)")
	}
	return r, nil
}

// ForceUnlock asks to break lock Name if Holder still holds it.
type ForceUnlock struct {
	Name, Holder, Reason string
}

// Unlocked is what ForceUnlock did: the plan as of just before, and
// after a lost race (CodeConflict) the lock's holders now.
type Unlocked struct {
	Plan    inspect.ForceUnlockPlan
	Holders []inspect.Holder
}

// ForceUnlock breaks the lock if the holder still holds it. The audit
// record gets the state before and after.
func (s *Service) ForceUnlock(ctx context.Context, a Actor, req ForceUnlock) (out Unlocked, err error) {
	rec := inspect.AuditRecord{Action: ActionForceUnlock, Target: req.Name}
	defer func() { s.finish(ctx, a, &rec, err) }()
	if req.Holder == "" {
		return out, inspect.Invalid("holder", "holder is required: the holder id shown for the lock")
	}
	if rec.Reason, err = CheckReason(req.Reason); err != nil {
		return out, err
	}
	name, holder := req.Name, req.Holder
	if err := s.scoped("lock", name); err != nil {
		return out, err
	}
	if before, err := s.insp.GetLock(ctx, name); err == nil {
		rec.Before = holdersState(before)
		out.Plan = before.ForceUnlockPlan(holder)
	}
	if err := s.intend(ctx, a, &rec); err != nil {
		return out, err
	}
	err = s.insp.ForceUnlock(ctx, name, holder)
	if errors.Is(err, inspect.ErrHolderChanged) {
		cur, gerr := s.insp.GetLock(ctx, name)
		if gerr != nil {
			return out, inspect.ObjectError("lock", name, gerr)
		}
		rec.After = holdersState(cur)
		out.Holders = nonNil(cur.Holders)
		return out, inspect.ObjectError("lock", name, err)
	}
	if err != nil {
		return out, inspect.ObjectError("lock", name, err)
	}
	s.refresh(ctx, []string{name}, nil)
	rec.After = "released (holder " + holder + ")"
	if out.Plan.RemovesField != "" {
		rec.After = "removed holder " + holder + "; the other holders keep the lock"
	}
	s.logger(a).Info("lock force-unlocked", "name", name, "holder", holder, "reason", rec.Reason, "remote", a.Remote)
	s.unlocked(ctx, name, holder)
	return out, nil
}

// ReleaseAll asks to break every hold of one client.
type ReleaseAll struct {
	Client string // the client's UUID
	Reason string
}

// Released is one hold ReleaseAll tried.
type Released struct {
	Lock   string `json:"lock"`
	Holder string `json:"holder"`
	// Released is false when the holder let go (or lost the lock) before
	// the console got there; Error says what was found instead.
	Released bool   `json:"released"`
	Error    string `json:"error,omitempty"`
}

// ReleaseAll breaks every hold of the client as the live view shows it.
// Each lock is holder-checked by ForceUnlock and gets its own audit
// record; the request's own record says how many were released.
func (s *Service) ReleaseAll(ctx context.Context, a Actor, req ReleaseAll) (out []Released, err error) {
	id := req.Client
	rec := inspect.AuditRecord{Action: ActionReleaseAll, Target: id}
	defer func() { s.finish(ctx, a, &rec, err) }()
	if inspect.ClientIDOf(id+":x") != id {
		return nil, inspect.Invalid("id", "the client id must be a UUID (36 characters, 8-4-4-4-12 hex digits)")
	}
	reason, err := CheckReason(req.Reason)
	if err != nil {
		return nil, err
	}
	rec.Reason = reason
	var holds []inspect.Hold
	if s.live != nil {
		holds = s.live.Holds(id)
	}
	rec.Before = strconv.Itoa(len(holds)) + " holds and waits as last read"
	if err := s.intend(ctx, a, &rec); err != nil {
		return nil, err
	}
	results, err := s.insp.ReleaseAll(ctx, id, holds)
	touched := make([]string, 0, len(results))
	for _, r := range results {
		touched = append(touched, r.Lock)
	}
	s.refresh(ctx, touched, nil)
	out = make([]Released, 0, len(results))
	released := 0
	for _, r := range results {
		one := inspect.AuditRecord{Action: ActionForceUnlock, Target: r.Lock, Reason: reason, Intent: rec.Intent,
			Before: "held by " + r.Holder + " (release-all of client " + id + ")"}
		rj := Released{Lock: r.Lock, Holder: r.Holder, Released: r.Err == nil}
		if r.What == "waits" {
			one.Action, one.Before = ActionDropWaiters, "queued as "+r.Holder+" (release-all of client "+id+")"
		}
		switch {
		case r.Err == nil && r.What == "waits":
			released++
			one.After, one.Outcome = "fair-queue places removed ("+r.Holder+")", inspect.OutcomeOK
		case r.What == "waits" && errors.Is(r.Err, inspect.ErrHolderChanged):
			one.Outcome, rj.Error = inspect.OutcomeConflict, "no longer queued; nothing was changed"
		case r.Err == nil:
			released++
			one.After, one.Outcome = "released (holder "+r.Holder+")", inspect.OutcomeOK
			s.unlocked(ctx, r.Lock, r.Holder)
		case errors.Is(r.Err, inspect.ErrHolderChanged):
			one.Outcome, rj.Error = inspect.OutcomeConflict, "no longer held by that holder; nothing was changed"
		case errors.Is(r.Err, inspect.ErrNotFound):
			one.Outcome, rj.Error = inspect.OutcomeNotFound, "the lock is gone"
		default:
			one.Outcome, rj.Error = inspect.OutcomeError, "could not release: "+r.Err.Error()
		}
		one.Detail = rj.Error
		s.Record(ctx, a, one)
		out = append(out, rj)
	}
	rec.After = strconv.Itoa(released) + " of " + strconv.Itoa(len(results)) + " holds released"
	s.logger(a).Info("client holds released", "client", id, "released", released, "tried", len(results), "reason", reason)
	return out, err
}

// finish records rec with the outcome of err.
func (s *Service) finish(ctx context.Context, a Actor, rec *inspect.AuditRecord, err error) {
	rec.Outcome = outcomeOf(err)
	if err != nil {
		rec.Detail = detailOf(err)
	}
	s.Record(ctx, a, *rec)
}

// holdersState describes a lock for the audit trail.
func holdersState(l *inspect.LockInfo) string {
	if l == nil {
		return ""
	}
	parts := make([]string, 0, len(l.Holders))
	for _, h := range l.Holders {
		p := h.ID + " ×" + strconv.FormatInt(h.Count, 10)
		if h.Mode != "" {
			p += " (" + h.Mode + ")"
		}
		parts = append(parts, p)
	}
	s := "holders: " + strings.Join(parts, ", ") + "; lease_ms: " + strconv.FormatInt(leaseMS(l.PTTL), 10)
	if l.Kind == inspect.KindFencedLock {
		s += "; fencing_token: " + strconv.FormatInt(l.FencingToken, 10)
	}
	return s
}

func nonNil(h []inspect.Holder) []inspect.Holder {
	if h == nil {
		return []inspect.Holder{}
	}
	return h
}

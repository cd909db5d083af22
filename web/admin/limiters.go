package admin

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/views/words"
)

// maxRate keeps rates exactly representable in the float64 a JSON number
// decodes to.
const maxRate = 1 << 53

// maxIntervalMS bounds the interval: a permit a day is already not a rate
// limit anyone means.
const maxIntervalMS = 24 * 60 * 60 * 1000

// LimiterEdit is a validated rate change (see CheckEdit).
type LimiterEdit struct {
	Name       string
	Rate       int64
	IntervalMS float64
	// KeepState is a Redisson limiter's choice (see inspect.LimiterEdit).
	KeepState bool
	// Reason is why, in the admin's words: required, and kept in the
	// audit trail with the settings before and after.
	Reason string
}

// Bounds of an edit whatever the kind: no limiter admits more than a
// million a second (more than one Redis node answers), holds more than a
// million permits, or waits more than a day between permits. Past them a
// value is a typo (a rate of 1e12), refused with the bounds in words.
const (
	MaxPermits    = 1_000_000
	MaxPerSecond  = 1_000_000
	MinIntervalMS = 1000.0 / MaxPerSecond // a token bucket's fastest refill
)

// CheckBounds refuses an edit no limiter of kind should get, saying the
// bounds of that kind: a token bucket's capacity and refill, a Redisson
// limiter's permits per whole-ms interval.
func CheckBounds(kind inspect.Kind, e LimiterEdit) error {
	switch kind {
	case inspect.KindTokenBucket:
		if e.Rate > MaxPermits {
			return inspect.Invalid("rate", fmt.Sprintf("rate is a token bucket's capacity (its largest burst) and must be from 1 to %s", words.Count(MaxPermits)))
		}
		if e.IntervalMS < MinIntervalMS {
			return inspect.Invalid("interval_ms", fmt.Sprintf("interval_ms is a token bucket's refill (one permit every interval_ms) and must be from %g (%s a second) to %s (one a day)",
				MinIntervalMS, words.Count(MaxPerSecond), words.Count(maxIntervalMS)))
		}
	case inspect.KindRedissonLimiter:
		if e.Rate > MaxPermits {
			return inspect.Invalid("rate", fmt.Sprintf("rate is a Redisson rate limiter's permits per interval and must be from 1 to %s", words.Count(MaxPermits)))
		}
		if e.IntervalMS < 1 || e.IntervalMS != math.Trunc(e.IntervalMS) {
			return inspect.Invalid("interval_ms", fmt.Sprintf("interval_ms of a Redisson rate limiter must be a whole number of ms from 1 to %s (a day)", words.Count(maxIntervalMS)))
		}
		if ps := float64(e.Rate) * 1000 / e.IntervalMS; ps > MaxPerSecond {
			return inspect.Invalid("rate", fmt.Sprintf("%d per %g ms is %s a second; a Redisson rate limiter takes at most %s a second",
				e.Rate, e.IntervalMS, words.Count(int64(ps)), words.Count(MaxPerSecond)))
		}
	}
	return nil
}

// CheckEditReason is CheckReason in an edit's words.
func CheckEditReason(r string) (string, error) {
	if strings.TrimSpace(r) == "" {
		return "", inspect.Invalid(FieldReason, "reason is required: say why the limiter changes (the audit trail keeps it beside the settings before and after)")
	}
	return CheckReason(r)
}

// ParseEdit reads an edit typed as text (a form) with CheckEdit's rules,
// naming the field at fault.
func ParseEdit(rate, intervalMS string) (LimiterEdit, error) {
	if rate == "" {
		return LimiterEdit{}, inspect.Invalid("rate", "rate is required")
	}
	r, err := strconv.ParseFloat(rate, 64)
	if err != nil {
		return LimiterEdit{}, inspect.Invalid("rate", "rate must be a whole number, e.g. 500")
	}
	if intervalMS == "" {
		return LimiterEdit{}, inspect.Invalid("interval_ms", "interval_ms is required")
	}
	iv, err := strconv.ParseFloat(intervalMS, 64)
	if err != nil {
		return LimiterEdit{}, inspect.Invalid("interval_ms", "interval_ms must be a number of milliseconds, e.g. 2 or 0.5")
	}
	return CheckEdit(r, iv)
}

// CheckEdit checks what can be known without Redis: the store checks
// again, but a clear per-field message is cheaper here.
func CheckEdit(rate, intervalMS float64) (LimiterEdit, error) {
	switch {
	case math.IsNaN(rate) || math.IsInf(rate, 0):
		return LimiterEdit{}, inspect.Invalid("rate", "rate must be a finite number")
	case rate != math.Trunc(rate):
		return LimiterEdit{}, inspect.Invalid("rate", "rate must be a whole number of permits")
	case rate < 1:
		return LimiterEdit{}, inspect.Invalid("rate", "rate must be at least 1")
	case rate > maxRate:
		return LimiterEdit{}, inspect.Invalid("rate", fmt.Sprintf("rate must be at most %d", int64(maxRate)))
	case math.IsNaN(intervalMS) || math.IsInf(intervalMS, 0):
		return LimiterEdit{}, inspect.Invalid("interval_ms", "interval_ms must be a finite number")
	case intervalMS <= 0:
		return LimiterEdit{}, inspect.Invalid("interval_ms", "interval_ms must be greater than 0")
	case intervalMS > maxIntervalMS:
		return LimiterEdit{}, inspect.Invalid("interval_ms", fmt.Sprintf("interval_ms must be at most %d (one day)", int64(maxIntervalMS)))
	}
	return LimiterEdit{Rate: int64(rate), IntervalMS: intervalMS}, nil
}

// ModifyLimiter applies a rate change and records the settings before and
// after.
func (s *Service) ModifyLimiter(ctx context.Context, a Actor, edit LimiterEdit) (l *inspect.LimiterInfo, err error) {
	name := edit.Name
	rec := inspect.AuditRecord{Action: ActionModify, Target: name}
	defer func() { s.finish(ctx, a, &rec, err) }()
	if rec.Reason, err = CheckEditReason(edit.Reason); err != nil {
		return nil, err
	}
	if err := s.scoped("limiter", name); err != nil {
		return nil, err
	}
	if before, err := s.insp.GetLimiter(ctx, name); err == nil {
		rec.Before = limiterState(before)
		if err := CheckBounds(before.Kind, edit); err != nil {
			return nil, err
		}
	}
	if err := s.intend(ctx, a, &rec); err != nil {
		return nil, err
	}
	l, err = s.insp.ModifyLimiterWith(ctx, name, inspect.LimiterEdit{Rate: edit.Rate, IntervalMS: edit.IntervalMS, KeepState: edit.KeepState})
	if err != nil {
		return nil, inspect.ObjectError("limiter", name, err)
	}
	rec.After = limiterState(l)
	if l.Kind == inspect.KindRedissonLimiter {
		rec.After += map[bool]string{true: " (state kept)", false: " (state reset)"}[edit.KeepState]
	}
	s.logger(a).Info("limiter modified", "name", name, "rate", edit.Rate, "interval_ms", edit.IntervalMS,
		"keep_state", edit.KeepState, "remote", a.Remote)
	s.refresh(ctx, nil, []string{name})
	return l, nil
}

// ResetCounter asks to forget an access counter's hits.
type ResetCounter struct{ Name string }

// ResetCounter deletes the counter, recording the count it had.
func (s *Service) ResetCounter(ctx context.Context, a Actor, req ResetCounter) (err error) {
	name := req.Name
	rec := inspect.AuditRecord{Action: ActionReset, Target: name}
	defer func() { s.finish(ctx, a, &rec, err) }()
	if err := s.scoped("counter", name); err != nil {
		return err
	}
	if before, err := s.insp.GetLimiter(ctx, name); err == nil {
		rec.Before = limiterState(before)
	}
	if err := s.intend(ctx, a, &rec); err != nil {
		return err
	}
	if err := s.insp.ResetCounter(ctx, name); err != nil {
		return inspect.ObjectError("counter", name, err)
	}
	s.refresh(ctx, nil, []string{name})
	rec.After = "reset (key deleted)"
	s.logger(a).Info("counter reset", "name", name, "remote", a.Remote)
	return nil
}

// limiterState describes a limiter for the audit trail: the settings an
// edit changes, or a counter's count a reset forgets.
func limiterState(l *inspect.LimiterInfo) string {
	if l == nil {
		return ""
	}
	if l.Kind == inspect.KindCounter {
		return "count=" + strconv.FormatInt(l.Count, 10) + " ttl_ms=" + strconv.FormatInt(leaseMS(l.TTL), 10)
	}
	return "rate=" + strconv.FormatInt(l.Rate, 10) + " interval_ms=" + strconv.FormatFloat(l.IntervalMS, 'g', -1, 64)
}

// leaseMS is a lease in ms, -1 for a key without expiry.
func leaseMS(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	return d.Milliseconds()
}

package admin

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
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
	if err := s.scoped("limiter", name); err != nil {
		return nil, err
	}
	if before, err := s.insp.GetLimiter(ctx, name); err == nil {
		rec.Before = limiterState(before)
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

package inspect

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockwarden/lockwarden/luascripts"
	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Sent once (store.Script.Run): a lost reply is store.ErrUncertain.
var counterResetScript = store.NewScript(luascripts.Source("counter_reset"))

// The console's view of limiters: read one, change its rate. The key
// decides the kind by what it holds (a hash's fields; a string only when its
// name matches a configured counter pattern), never by its name alone.

// GetLimiter reads one limiter with the Redis time of the read, so Available
// includes the refill (token bucket) or the returned grants (Redisson
// sliding window) up to now. Its hash is read by hash_read.lua, which
// leaves a hash too large to be a limiter unread. ErrNotFound when
// there is no key at name, store.ErrWrongKind when the key holds something
// that is not a limiter.
func (c *Inspector) GetLimiter(ctx context.Context, name string) (*LimiterInfo, error) {
	if err := validateName(name); err != nil {
		return nil, err
	}
	r, err := c.readByType(ctx, name)
	switch {
	case err != nil:
		return nil, err
	case r.lim == nil:
		if r.typ == "hash" && r.hash.TooLarge() {
			return nil, r.wrongKind("limiter", name)
		}
		return nil, store.ErrWrongKind
	case r.typ != "hash" || IsConvention(r.lim.Kind):
		return r.lim, nil
	}
	lims := []LimiterInfo{*r.lim}
	if err := c.ReadSides(ctx, c.rdb, nil, lims, r.nowMS); err != nil {
		return nil, err
	}
	return &lims[0], nil
}

// LimiterEdit is a change of rate from the console.
type LimiterEdit struct {
	// Rate: a token bucket's capacity, a Redisson limiter's permits per
	// interval.
	Rate int64
	// IntervalMS: a token bucket's time per permit (fractions allowed), a
	// Redisson limiter's window (whole milliseconds).
	IntervalMS float64
	// KeepState applies to Redisson limiters: false restarts every window
	// (Redisson's setRate), true keeps the permits already granted in the
	// running windows (Redisson's updateRate with keepState). Token buckets
	// always keep their state (the refill so far is credited at the old
	// rate).
	KeepState bool
}

// ModifyLimiter gives the limiter at name a new rate and interval and returns
// its state afterwards: ModifyLimiterWith without KeepState, i.e. Redisson's
// setRate for a Redisson limiter.
func (c *Inspector) ModifyLimiter(ctx context.Context, name string, rate int64, intervalMS float64) (*LimiterInfo, error) {
	return c.ModifyLimiterWith(ctx, name, LimiterEdit{Rate: rate, IntervalMS: intervalMS})
}

// ModifyLimiterWith changes a limiter's rate with its kind's semantics:
//
//   - token bucket: rate is the capacity (max_permits) and IntervalMS the
//     time per permit; time already elapsed is credited at the old rate
//     (see luascripts/tokenbucket_modify.lua).
//   - Redisson rate limiter: rate permits per IntervalMS (whole ms). With
//     KeepState false every window restarts (value and grants deleted, for
//     every client of a per-client limiter); with KeepState true what was
//     granted stays granted (see luascripts/redisson_limiter_set_rate.lua).
//     DescribeEdit says which, in words, before it happens.
//   - access counter: not editable here; its limit lives in the
//     application (a *store.ValidationError); ResetCounter forgets its hits.
//
// Invalid input is a *store.ValidationError (Field "rate" or "interval_ms") and
// changes nothing. ErrNotFound when there is no limiter at name (the error
// also matches store.ErrModify); store.ErrWrongKind when the key holds something else.
func (c *Inspector) ModifyLimiterWith(ctx context.Context, name string, e LimiterEdit) (*LimiterInfo, error) {
	if err := validateName(name); err != nil {
		return nil, err
	}
	// The loosest rule of any kind, checked before any I/O; each kind's own
	// rules follow once the kind is known.
	if err := (store.Limit{Capacity: e.Rate, IntervalMS: e.IntervalMS}).Validate(); err != nil {
		return nil, err
	}
	info, err := c.GetLimiter(ctx, name)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("%w: %w", ErrNotFound, store.ErrModify)
	}
	if err != nil {
		return nil, err
	}
	switch info.Kind {
	case KindRedissonLimiter:
		err = c.editRedisson(ctx, info, e)
	case KindCounter:
		return nil, invalid("rate", "an access counter's limit is enforced by the application's own script; reset the counter instead")
	case KindTokenBucket:
		err = c.app.NewTokenBucket(name, nil).SetRate(ctx, store.Limit{Capacity: e.Rate, IntervalMS: e.IntervalMS})
	default:
		return nil, invalid("rate", "a %s limiter's settings are the application's; lockwarden can only reset it", info.Kind)
	}
	if errors.Is(err, store.ErrModify) {
		return nil, fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	if err != nil {
		return nil, err
	}
	return c.GetLimiter(ctx, name)
}

// editRedisson runs the set-rate script over every state key the limiter
// has (the overall pair, or each client's pair).
func (c *Inspector) editRedisson(ctx context.Context, info *LimiterInfo, e LimiterEdit) error {
	if field, msg := wire.CheckRedissonRate(e.Rate, e.IntervalMS); field != "" {
		return &store.ValidationError{Field: field, Message: msg}
	}
	if info.PerClient {
		return c.editRedissonPerClient(ctx, info, e)
	}
	keys := []string{info.Name, wire.RedissonValueKey(info.Name, ""), wire.RedissonPermitsKey(info.Name, "")}
	_, err := runSetRate(ctx, c.rdb, keys, e.Rate, int64(e.IntervalMS), e.KeepState, info.Algorithm, 0)
	return err
}

// maxPairsPerEdit bounds the client windows one set-rate call edits, so a
// limiter with any number of clients is edited in bounded steps.
const maxPairsPerEdit = 100

// editRedissonPerClient edits a per-client Redisson limiter of any number
// of clients: the first call changes the config (and no window), then every
// client's window found by SCAN is edited in batches of maxPairsPerEdit,
// each batch one atomic script counting "keep" against the rate the first
// call replaced. Between batches a client whose window is not yet edited
// keeps its old window for those milliseconds, as if it had acquired just
// before the edit.
func (c *Inspector) editRedissonPerClient(ctx context.Context, info *LimiterInfo, e LimiterEdit) error {
	oldRate, err := runSetRate(ctx, c.rdb, []string{info.Name}, e.Rate, int64(e.IntervalMS), e.KeepState, info.Algorithm, 0)
	if err != nil {
		return err
	}
	return c.redissonClientIDs(ctx, info.Name, func(ids []string) error {
		for len(ids) > 0 {
			n := min(len(ids), maxPairsPerEdit)
			keys := make([]string, 0, 1+2*n)
			keys = append(keys, info.Name)
			for _, id := range ids[:n] {
				keys = append(keys, wire.RedissonValueKey(info.Name, id), wire.RedissonPermitsKey(info.Name, id))
			}
			if _, err := runSetRate(ctx, c.rdb, keys, e.Rate, int64(e.IntervalMS), e.KeepState, info.Algorithm, oldRate); err != nil {
				return err
			}
			ids = ids[n:]
		}
		return nil
	})
}

// runSetRate changes an existing Redisson limiter's rate through the
// script the application's SetRate uses; see its header.
func runSetRate(ctx context.Context, rdb redis.UniversalClient, keys []string, rate, intervalMS int64,
	keep bool, algorithm string, oldRate int64) (int64, error) {
	code, old, err := wire.SetRedissonRateBatch(ctx, rdb, keys, rate, intervalMS, "", "", keep, algorithm, false, oldRate)
	var re redis.Error
	if err != nil && !errors.As(err, &re) {
		// Sent once and no reply (wire.RunOnce): it may have been applied.
		err = &store.UncertainError{Err: err}
	}
	switch {
	case err != nil:
		return 0, wrongKindErr(err)
	case code == 1:
		return old, nil
	case code == 0:
		return 0, store.ErrModify
	}
	return 0, store.ErrWrongKind
}

// DescribeEdit says, before it happens, what ModifyLimiterWith(e) will do
// to the limiter as read in info: which state is kept or restarted and
// what an acquire will find right after. The console shows it next to the
// choice.
func (info *LimiterInfo) DescribeEdit(e LimiterEdit) string {
	switch info.Kind {
	case KindCounter:
		return "An access counter's limit is set by the application; lockwarden can only reset its count."
	case KindTokenBucket:
		return fmt.Sprintf("The bucket becomes %s; permits refilled so far are credited at the old rate and capped at the new capacity.",
			store.Limit{Capacity: e.Rate, IntervalMS: e.IntervalMS})
	case KindRedissonLimiter:
	default:
		return ""
	}
	target := "the window"
	if info.PerClient {
		target = "every client's window"
	}
	newRate := fmt.Sprintf("%d per %s", e.Rate, time.Duration(e.IntervalMS)*time.Millisecond)
	if !e.KeepState {
		return fmt.Sprintf("Resets %s (Redisson setRate): the value and grant keys are deleted, so the next acquire starts a full window of %s, even if permits were just handed out.", target, newRate)
	}
	switch info.Algorithm {
	case AlgorithmFixedWindow:
		if info.PerClient {
			return fmt.Sprintf("Keeps each client's window: permits already taken in it stay taken (new value = %d minus taken, not below 0); each window still ends when it would have, or within %d ms.", e.Rate, int64(e.IntervalMS))
		}
		return fmt.Sprintf("Keeps the running window: the %d permits taken in it stay taken, so %d are available until it ends (in %s, or %d ms if sooner); then windows of %s.",
			info.Grants, max(0, e.Rate-info.Grants), info.ResetIn.Round(time.Millisecond), int64(e.IntervalMS), newRate)
	case AlgorithmSlidingWindow:
		if info.PerClient {
			return fmt.Sprintf("Keeps each client's grants: grants older than %d ms are dropped and each value becomes %d minus what that client was granted in the last %d ms (not below 0).", int64(e.IntervalMS), e.Rate, int64(e.IntervalMS))
		}
		return fmt.Sprintf("Keeps the grants: those older than %d ms are dropped and the value becomes %d minus the permits granted in the last %d ms (now %d granted in the current %g ms window), not below 0.",
			int64(e.IntervalMS), e.Rate, int64(e.IntervalMS), info.Grants, info.IntervalMS)
	}
	return fmt.Sprintf("Nobody has acquired yet, so there is no state to keep: the first acquire starts a full window of %s.", newRate)
}

// ResetCounter forgets the hits of the access counter at name, so the
// client it limits is admitted again at once (its next hit starts a new
// window). ErrNotFound: no such key. store.ErrWrongKind: the key is not a
// counter (not matching a counter pattern, or not a whole number); it is
// left alone.
func (c *Inspector) ResetCounter(ctx context.Context, name string) error {
	if err := validateName(name); err != nil {
		return err
	}
	p := c.ObjectPatterns()
	if _, ok := p.counterRule(name); !ok || p.claimsString(name) {
		// Another library's limiter is reset as that library does.
		if done, err := c.resetConvention(ctx, name); done || err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("store: reset counter %q: %w: matches no counter pattern", name, store.ErrWrongKind)
		}
	}
	code, err := counterResetScript.Run(ctx, c.rdb, []string{name}).Int64()
	if err != nil {
		return fmt.Errorf("store: reset counter %q: %w", name, err)
	}
	switch code {
	case 1:
		return nil
	case 0:
		return fmt.Errorf("store: reset counter %q: %w", name, ErrNotFound)
	}
	return fmt.Errorf("store: reset counter %q: %w", name, store.ErrWrongKind)
}

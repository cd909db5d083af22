package alert

import (
	"time"

	"github.com/lockwarden/lockwarden/views/words"
	"github.com/lockwarden/lockwarden/web/live"
)

// RuleLockWaitTooLong fires for a lock whose acquisitions wait too long:
// the p99 of its contended acquisitions' waits over the last 10 s (the
// wait stats store's scripts record, store/inspect/waits.go) stays over
// Config.WaitTooLong for the rule's "for" duration (a minute by default).
const RuleLockWaitTooLong = "lock-wait-too-long"

// DefaultWaitTooLong is lock-wait-too-long's threshold.
const DefaultWaitTooLong = 5 * time.Second

// waitRuleFor is lock-wait-too-long's default "for" duration: a p99 over a
// 10 s window that stays high for a minute is a lock making everyone wait,
// not one slow holder.
const waitRuleFor = time.Minute

func (c *Config) waitTooLong() time.Duration {
	if c == nil || c.WaitTooLong <= 0 {
		return DefaultWaitTooLong
	}
	return c.WaitTooLong
}

// waitConditions adds a lock-wait-too-long condition for every lock of sn
// whose p99 wait over the last 10 s is over the threshold.
func (a *Engine) waitConditions(sn *live.Snapshot, add func(rule, name, format string, args ...any)) {
	limit := a.cfg.waitTooLong()
	for _, l := range sn.Locks {
		w := sn.Stats[l.Name].Wait
		if w == nil || w.TenSeconds.Contended == 0 {
			continue
		}
		if p99 := time.Duration(w.TenSeconds.P99MS) * time.Millisecond; p99 > limit {
			add(RuleLockWaitTooLong, l.Name, "lock %s: p99 wait %s over the last 10 s (limit %s; %s of %s acquisitions waited, longest %s)",
				l.Name, words.Duration(p99.Milliseconds()), words.Duration(limit.Milliseconds()),
				words.Count(w.TenSeconds.Contended), words.Count(w.TenSeconds.Acquired), words.Duration(w.TenSeconds.MaxMS))
		}
	}
}

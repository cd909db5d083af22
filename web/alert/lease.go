package alert

import (
	"fmt"
	"strings"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/views/words"
	"github.com/lockwarden/lockwarden/web/live"
)

// RuleLockLeaseLost fires for a lock with a lease violation (web/live's
// leases.go): a hold that ran out while its holder still worked, a
// release or renewal that came after its hold ended, an eviction. Two
// holders may have run the critical section at once; it stays firing for
// leaseLostFiring after the newest one, so a receiver hears it even though
// the lock is long fine again.
const RuleLockLeaseLost = "lock-lease-lost"

// leaseLostFiring is how long a violation keeps its lock's alert firing.
const leaseLostFiring = 15 * time.Minute

// leaseConditions adds a lock-lease-lost condition per lock with a
// violation in the last leaseLostFiring, saying the newest.
func leaseConditions(sn *live.Snapshot, now time.Time, add func(rule, name, format string, args ...any)) {
	newest := map[string]live.LeaseViolation{}
	var order []string
	for _, v := range sn.Violations {
		if now.Sub(v.At) > leaseLostFiring {
			continue
		}
		if _, ok := newest[v.Lock]; !ok {
			order = append(order, v.Lock)
		}
		newest[v.Lock] = v
	}
	for _, name := range order {
		add(RuleLockLeaseLost, name, "%s", LeaseMessage(sn.Registry, newest[name]))
	}
}

// LeaseMessage says a violation in words, naming both holders.
func LeaseMessage(reg *inspect.Registry, v live.LeaseViolation) string {
	var b strings.Builder
	who := inspect.DescribeHolder(reg, v.Holder)
	switch v.Kind {
	case live.ViolationExpiredWhileWorking:
		fmt.Fprintf(&b, "lock %s: the lease of %s ran out while its client was alive", v.Lock, who)
	case live.ViolationReleasedAfterExpiry:
		fmt.Fprintf(&b, "lock %s: %s released or renewed it %s after its hold had ended", v.Lock, who,
			words.Duration(v.LateMS))
	case live.ViolationRenewedAfterRelease:
		fmt.Fprintf(&b, "lock %s: %s renewed it %s after releasing it", v.Lock, who, words.Duration(v.LateMS))
	case live.ViolationEvicted:
		fmt.Fprintf(&b, "lock %s: Redis evicted it while %s held it (maxmemory-policy)", v.Lock, who)
	default:
		fmt.Fprintf(&b, "lock %s: %s: %s", v.Lock, v.Kind, who)
	}
	if v.NextHolder != "" {
		fmt.Fprintf(&b, "; %s took it, so both may have worked at once", inspect.DescribeHolder(reg, v.NextHolder))
	}
	if v.Probable {
		b.WriteString(" (probable: " + v.Reason + ")")
	}
	return b.String()
}

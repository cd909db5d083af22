package alert

import (
	"fmt"
	"strings"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/live"
)

// RuleLockDeadlock fires for every cycle of the wait-for graph live found
// (web/live/deadlocks.go): each holder in it waits for the next one's lock
// and every watchdog keeps renewing, so nothing ends but a force-unlock.
const RuleLockDeadlock = "lock-deadlock"

// deadlockName names a cycle's alert by its locks in order, back to the
// first: "L1 → L2 → L1". Two cycles through one lock get two alerts.
func deadlockName(d inspect.Deadlock) string {
	var b strings.Builder
	for _, s := range d.Cycle {
		b.WriteString(s.Lock)
		b.WriteString(" → ")
	}
	b.WriteString(d.Cycle[0].Lock)
	return b.String()
}

// deadlockMessage names each lock, its holder and what that holder waits
// for, with identities from the registry; the holder of each step is the
// waiter of the step before.
func deadlockMessage(reg *inspect.Registry, d inspect.Deadlock) string {
	parts := make([]string, len(d.Cycle))
	for i, s := range d.Cycle {
		parts[i] = fmt.Sprintf("%s is held by %s (%s), which waits for %s", s.Lock,
			inspect.DescribeHolder(reg, s.Holder), s.Holder, s.WaitsFor)
	}
	return "deadlock: " + strings.Join(parts, "; ") + ". Nothing ends it but a force-unlock of one hold (see /deadlocks)"
}

// deadlockConditions adds a condition per cycle of sn.
func deadlockConditions(sn *live.Snapshot, add func(rule, name, format string, args ...any)) {
	for _, d := range sn.Deadlocks {
		add(RuleLockDeadlock, deadlockName(d.Deadlock), "%s", deadlockMessage(sn.Registry, d.Deadlock))
	}
}

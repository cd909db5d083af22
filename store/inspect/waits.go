package inspect

import (
	"time"

	"github.com/lockwarden/lockwarden/store/inspect/stats"
)

// Wait statistics are package stats' (a WaitBook folds what the sample
// reads of the rings); these names keep them reachable beside the model.
type (
	WaitStats   = stats.WaitStats
	WaitTotals  = stats.WaitTotals
	WaitWindows = stats.WaitWindows
)

// WaitClasses is the number of histogram classes of the stats layout.
const WaitClasses = stats.WaitClasses

// WaitClassBoundsMS are the classes' upper bounds in ms; the last class
// has none (waits over 10 s).
var WaitClassBoundsMS = stats.WaitClassBoundsMS

// AddWaits sets the wait windows of every lock in s (Summary.Wait) from
// what the console folded of their stats rings, and forgets the locks that
// had nothing for a minute. Sample calls it; a SampleWith caller calls it
// once it has completed the sample.
func (c *Inspector) AddWaits(s *Sample) {
	now := BucketOf(s.At)
	add := func(name string) {
		if w := c.waits.Windows(name, now); w != nil {
			sum := s.Stats[name]
			sum.Wait = w
			s.Stats[name] = sum
		}
	}
	for _, l := range s.Locks {
		add(l.Name)
	}
	for _, name := range s.Lingered {
		add(name)
	}
	c.waits.Prune(now)
}

// WaitsOf is the wait windows of the lock at name as of at, from what the
// console folded of its stats ring while it read it: a lock no longer
// listed (free now) keeps its waits of the last minute. Nil when it had
// no acquisition in that minute. It reads no Redis.
func (c *Inspector) WaitsOf(name string, at time.Time) *WaitWindows {
	return c.waits.Windows(name, BucketOf(at))
}

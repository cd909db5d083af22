package inspect

import (
	"time"
)

// What the console's configuration and callers name of discovery, which
// package walk does: the defaults of its budget and pass, and what a
// tick's step of it found (Sample.Walk).

const (
	// DefaultDiscoveryPass is how long a reconciliation pass over the
	// keyspace should take.
	DefaultDiscoveryPass = time.Minute
	// DefaultDiscoveryBudget is the share of one Redis core the console's
	// commands may use: its sampling is paid first and the walk gets the
	// rest. 4.5 %: an idle console may use 5 % of a core (DESIGN.md), and
	// Redis spends 0.3-0.5 % more on the console than its commands'
	// measured time (its event loop, replies; measured at 1M keys, 10,000
	// idle locks).
	DefaultDiscoveryBudget = 0.045
)

// Source says how the walk found an object.
type Source string

const (
	SourceAnnounced Source = "announced" // the registry's names zset
	SourceNotified  Source = "notified"  // a keyspace notification
	SourceScan      Source = "scan"      // the reconciliation walk
)

// WalkStep is what one tick's step of discovery found.
type WalkStep struct {
	// Locks and Limiters are objects classified this tick that were not
	// among the names sampled; they carry what their hash says (their side
	// keys are read by the next sample that names them). Sources says how
	// each was found.
	Locks    []LockInfo
	Limiters []LimiterInfo
	Sources  map[string]Source
	// PassEnded says this page was the last of a pass: every key that
	// existed when the pass began has now been listed. Its last keys are
	// classified three ticks later.
	PassEnded bool
	// Skipped counts hashes sized this tick with more fields than any
	// known layout has (never read).
	Skipped int
}

package live

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// Snapshot is the console's view after one tick. Published whole and never
// modified afterwards, so every reader uses it freely.
type Snapshot struct {
	Taken     time.Time // local time the tick started
	At        int64     // epoch ms: the end of the 1 s window (start of the newest bucket)
	SampledAt time.Time // Redis TIME in the pipeline that read the PTTLs
	Locks     []inspect.LockInfo
	Limiters  []inspect.LimiterInfo
	Stats     map[string]inspect.Summary
	FirstSeen map[string]time.Time // lock name -> when the console first discovered it
	// Discovered is when the discovery pass that chose these names
	// started (local time); pages rendered later may know newer objects.
	Discovered time.Time
	RedisUp    bool
	// Registry is the client registry as last read (at most once a second,
	// see holders.go); nil until the first read succeeds.
	Registry *inspect.Registry
	// HolderSeen is when the console first saw each current holder of each
	// lock (key HolderKey(name, holder)): the hold time of holders whose
	// scripts record none.
	HolderSeen map[string]time.Time
	// Families are the limiter families with members (families.go), in
	// inspect.Families order.
	Families []inspect.FamilyRow
	// Deadlocks are the cycles of the wait-for graph of Locks
	// (deadlocks.go), oldest key first.
	Deadlocks []SeenDeadlock
	// Lingered are locks gone a moment ago whose stats rings this tick
	// still read (inspect.Sample.Lingered): each has its Stats, with the
	// waits its scripts recorded as it went free, and is in no list.
	Lingered []string
	// Violations are the lease violations of the last ViolationsKept
	// (leases.go), oldest first.
	Violations []LeaseViolation
	// ViolationsTotal is how many violations were reported since the
	// start: the last ViolationsTotal-n of Violations are those reported
	// since a snapshot whose total was n.
	ViolationsTotal int64
	// Settings are the masters' settings as last read (settings.go); nil
	// before the first read.
	Settings []inspect.NodeSettings

	memo *Memo
}

// Family is the family with id, or nil.
func (sn *Snapshot) Family(id string) *inspect.FamilyRow {
	if sn == nil {
		return nil
	}
	for i := range sn.Families {
		if sn.Families[i].ID == id {
			return &sn.Families[i]
		}
	}
	return nil
}

// Waits is the wait windows of the lock at name: zero windows (1 s, 10 s,
// 1 min) when it had no acquisition in the last minute.
func (sn *Snapshot) Waits(name string) inspect.WaitWindows {
	if sn != nil {
		if w := sn.Stats[name].Wait; w != nil {
			return *w
		}
	}
	return inspect.WaitWindows{Second: inspect.WaitStats{WindowS: 1},
		TenSeconds: inspect.WaitStats{WindowS: 10}, Minute: inspect.WaitStats{WindowS: 60}}
}

// Window returns the last complete 1 s window of name.
func (sn *Snapshot) Window(name string) inspect.Counts {
	if sn == nil {
		return inspect.Counts{}
	}
	return sn.Stats[name].Window
}

// Memo is where readers keep what they derive from this snapshot (the
// lists' sorted orders); nil-safe.
func (sn *Snapshot) Memo() *Memo {
	if sn == nil {
		return nil
	}
	return sn.memo
}

// HoldStart is when l's holder took it: the earliest acquisition
// lockwarden's scripts recorded for a current holder, else the console's
// own first sight of the lock.
func (sn *Snapshot) HoldStart(l inspect.LockInfo) (time.Time, bool) {
	var first int64
	for _, h := range l.Holders {
		if h.AcquiredMS > 0 && (first == 0 || h.AcquiredMS < first) {
			first = h.AcquiredMS
		}
	}
	if first > 0 {
		return time.UnixMilli(first), true
	}
	t, ok := sn.FirstSeen[l.Name]
	return t, ok
}

// Subscribers is the last count of lock name's channel subscribers the
// walker made (inspect's subscribers.go); nil when not counted. A read of
// one lock outside the tick has no count of its own.
func (sn *Snapshot) Subscribers(name string) *int64 {
	if sn == nil {
		return nil
	}
	for i := range sn.Locks {
		if sn.Locks[i].Name == name {
			return sn.Locks[i].Subscribers
		}
	}
	return nil
}

// HolderKey names one holder of one lock in Snapshot.HolderSeen.
func HolderKey(lock, holder string) string { return lock + "\x00" + holder }

// Memo keeps values derived from one snapshot. A snapshot lives one tick
// and distinct derivations are few unless a client sweeps patterns, so it
// is bounded: past maxMemo entries nothing more is kept.
type Memo struct {
	m sync.Map
	n atomic.Int64
}

const maxMemo = 32

// Load returns the value kept under k.
func (m *Memo) Load(k any) (any, bool) {
	if m == nil {
		return nil, false
	}
	return m.m.Load(k)
}

// Keep keeps v under k whatever the count: for the few values every
// reader derives (an unfiltered order per list, sort and direction).
func (m *Memo) Keep(k, v any) {
	if m != nil {
		m.m.Store(k, v)
	}
}

// Store keeps v under k while there is room.
func (m *Memo) Store(k, v any) {
	if m != nil && m.n.Add(1) <= maxMemo {
		m.m.Store(k, v)
	}
}

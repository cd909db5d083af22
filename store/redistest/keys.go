package redistest

import "github.com/lockwarden/lockwarden/store/internal/wire"

// Key and channel names, for tests outside store that watch or write what
// lockwarden's scripts and Redisson keep beside an object (the layout
// itself is defined in store/internal/wire, which only store's packages
// may import).

// StatsKey is the hash of 200 ms outcome counters beside the object at name.
func StatsKey(name string) string { return wire.StatsKey(name) }

// UnlockChannel is where a Redisson RLock at name announces its release.
func UnlockChannel(name string) string { return wire.UnlockChannel(name) }

// RWLockChannel is where a Redisson read-write lock at name announces releases.
func RWLockChannel(name string) string { return wire.RWLockChannel(name) }

// TokenLockChannel is where store's token-lock releases at name are announced.
func TokenLockChannel(name string) string { return wire.TokenLockChannel(name) }

// FairLockQueueKey and FairLockTimeoutKey are a Redisson fair lock's waiter
// queue and waiter deadlines.
func FairLockQueueKey(name string) string { return wire.FairLockQueueKey(name) }

// FairLockTimeoutKey: see FairLockQueueKey.
func FairLockTimeoutKey(name string) string { return wire.FairLockTimeoutKey(name) }

// FencingTokenKey is a Redisson fenced lock's token counter.
func FencingTokenKey(name string) string { return wire.FencingTokenKey(name) }

// LockQueueKey is the waiter queue store's reentrant lock keeps beside the
// lock at name.
func LockQueueKey(name string) string { return wire.LockQueueKey(name) }

package store

import (
	"strconv"
	"time"
)

// Wait statistics and poll waiters (layouts above wire.BucketMS and at
// wire.PollWaitersKey). A script that grants a caller cannot tell whether
// the caller waited, unless it was queued, so every waiting call keeps a
// waitClock and passes what it has waited with each attempt after a failed
// one; the grant then adds that wait to the lock's stats bucket in the same
// script. The kinds that wait without a queue (spin, token and read-write
// locks) also pass a poll-waiter id, so each failed attempt leaves an entry
// the console reads as a waiter, and the grant deletes it. Neither costs a
// round trip: they ride on the attempts the wait sends anyway, and a first
// attempt that succeeds sends "0" and no id's entry is written.

// waitClock is one waiting call (Lock) across its attempts.
type waitClock struct {
	start  time.Time
	failed bool   // an attempt of this call failed: its grant is contended
	id     string // poll-waiter id; "" for kinds whose waiters queue
	ttl    time.Duration
}

// newPollClock starts the clock of a call that polls every interval at most.
func newPollClock(interval time.Duration) *waitClock {
	return &waitClock{start: time.Now(), id: newWaitToken(), ttl: pollEntryTTL(interval)}
}

// pollEntryTTL is how long a poll waiter's entry lives without a refresh:
// three attempts' worth, so one slow attempt does not make it vanish, and at
// least a second.
func pollEntryTTL(interval time.Duration) time.Duration { return max(3*interval, time.Second) }

// waitedMS is the ARGV a script records as the wait: 0 until an attempt
// failed, then the time since the first attempt in whole ms, at least 1.
func (w *waitClock) waitedMS() string {
	if w == nil || !w.failed {
		return "0"
	}
	ms := (time.Since(w.start) + time.Millisecond - 1).Milliseconds()
	return strconv.FormatInt(max(ms, 1), 10)
}

// pollArgs are the (waited, id, entry lifetime) arguments of the attempt
// scripts that take poll waiters; nil w sends none of them.
func (w *waitClock) pollArgs() []any {
	if w == nil {
		return nil
	}
	return []any{w.waitedMS(), w.id, strconv.FormatInt(w.ttl.Milliseconds(), 10)}
}

// Why a parked waiter woke.
const (
	wokeHandedOff = iota
	wokeMessage
	wokeTimer
	wokeDone
)

// waitTurn is one waiting Lock call's place in the queue.
type waitTurn struct {
	token  string
	queued bool // an attempt with token was answered "queued"
	// queuedAt is when the latest such attempt was sent: the entry lives
	// at least waitEntryTTL from then, and a hand-off to it sets the lease
	// after it.
	queuedAt time.Time
	// claimed is set once an attempt queued the token with the short claim
	// lease (replica acknowledgement required): a hand-off to it must then
	// be confirmed.
	claimed bool
	clock   *waitClock
	// behind is the token of the waiter this one followed in process
	// before it queued itself (lock_follow.go).
	behind string
}

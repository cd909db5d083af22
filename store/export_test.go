package store

import (
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
)

// State the tests read that no caller needs: whether a handle still renews
// what it holds. Renewals of a hold that is gone change nothing in Redis,
// so only the handle can say it stopped.

// renewing reports whether holds of name/holder are being renewed.
func (s *lockShared) renewing(name, holder string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.wd.renewals[renewKey{name, holder}] != nil
}

// renewing reports whether the handle's watchdog runs.
func (rw *RWLock) renewing() bool { return rw.renewal.running() }

// renewing reports whether the renewal timer runs.
func (s *SpinLock) renewing() bool { return s.renewal.running() }

// running reports whether the renewal goroutine runs.
func (r *renewer) running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stop != nil
}

// setTrains sets how long after a queued waiter of c others may follow it
// and how long they follow before they queue themselves (lock_follow.go);
// a window of 0 makes every waiter queue itself.
func setTrains(c *Client, window, max time.Duration) {
	h := &sharedFor(c).hub
	h.mu.Lock()
	h.followWindow, h.followMax = window, max
	h.mu.Unlock()
}

// nudgeFollowers makes c's waiters that follow a train on name stop
// following, as their followMax passing does: follow ends its wait on the
// hand-off signal as on its timer, and with no pass given the follower
// queues itself behind the waiter it followed.
func nudgeFollowers(c *Client, name string) {
	h := &sharedFor(c).hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if cw := h.channels[wire.UnlockChannel(name)]; cw != nil {
		for w := range cw.members {
			if w.train != nil && w.train.leader != w.token && w.parked {
				select {
				case w.H <- struct{}{}:
				default:
				}
			}
		}
	}
}

// following counts c's waiters on name that follow a train.
func following(c *Client, name string) int {
	h := &sharedFor(c).hub
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	if cw := h.channels[wire.UnlockChannel(name)]; cw != nil {
		for w := range cw.members {
			if w.train != nil && w.train.leader != w.token && w.parked {
				n++
			}
		}
	}
	return n
}

package store

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

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
func (rw *RWLock) renewing() bool {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.stop != nil
}

// renewing reports whether the renewal timer runs.
func (s *SpinLock) renewing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stop != nil
}

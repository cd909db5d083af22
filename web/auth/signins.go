package auth

import (
	"sync"
	"time"
)

// SignIns summarises successful sign-ins, in memory, per role, token
// fingerprint and source since the last Drain: the audit trail gets one
// record per summary and interval, never one per sign-in, so a loop of
// sign-ins costs a record, not a flood of them.
type SignIns struct {
	mu sync.Mutex
	m  map[signInKey]*SignInSummary
}

type signInKey struct{ role, fp, source string }

// SignInSummary is what one role and token did from one source since the
// last Drain.
type SignInSummary struct {
	Role, Fingerprint, Source string
	Count                     int
	First, Last               time.Time
}

// note counts one sign-in. Sources past maxSummary share one summary per
// role and token (OtherSources).
func (s *SignIns) note(id Identity, source string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[signInKey]*SignInSummary{}
	}
	k := signInKey{id.Role.String(), id.Fingerprint, source}
	sum, ok := s.m[k]
	if !ok && len(s.m) >= maxSummary {
		k.source = OtherSources
		sum, ok = s.m[k]
	}
	if !ok {
		sum = &SignInSummary{Role: k.role, Fingerprint: k.fp, Source: k.source, First: now}
		s.m[k] = sum
	}
	sum.Count++
	sum.Last = now
}

// Drain returns the summaries since the last Drain and starts afresh.
func (s *SignIns) Drain() []SignInSummary {
	s.mu.Lock()
	defer s.mu.Unlock()
	return drain(s.m)
}

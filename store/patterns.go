package store

import (
	"time"
)

// Token locks and access counters are plain strings: nothing in a value like
// "f3a9..." or "17" says "lock" or "counter", and a console that guessed
// would offer to delete an application's cache entries. So lockwarden only
// treats a string as one of them when its name matches a pattern the
// operator configured for that kind.

// CounterRule says which string keys are seed-004 access counters and, when
// known, the limit the application enforces on them.
type CounterRule struct {
	// Pattern is a Redis glob (as for SCAN MATCH), e.g. "ip:limit:*".
	Pattern string
	// Limit is the most hits a window admits (seed 004's limit_count);
	// 0 when lockwarden is not told.
	Limit int64
	// Window is the window length (seed 004's limit_time); 0 when unknown.
	Window time.Duration
}

// ObjectPatterns configures string-based kinds for discovery and the console.
type ObjectPatterns struct {
	// TokenLocks are Redis globs of keys written with SET NX PX <token>
	// and released by compare-and-delete.
	TokenLocks []string
	// Counters are the INCR+EXPIRE access counters.
	Counters []CounterRule
}

// MaxPatterns bounds each list of ObjectPatterns.
const MaxPatterns = 64

// Validate checks p as New and SetObjectPatterns would: at most
// MaxPatterns per kind, non-empty patterns of at most MaxNameLen bytes,
// no negative limit or window. The error is a *ValidationError.
func (p ObjectPatterns) Validate() error {
	if len(p.TokenLocks) > MaxPatterns || len(p.Counters) > MaxPatterns {
		return invalid("patterns", "at most %d per kind", MaxPatterns)
	}
	for _, s := range p.TokenLocks {
		if s == "" || len(s) > MaxNameLen {
			return invalid("token_lock_pattern", "must be 1 to %d bytes, got %d", MaxNameLen, len(s))
		}
	}
	for _, r := range p.Counters {
		switch {
		case r.Pattern == "" || len(r.Pattern) > MaxNameLen:
			return invalid("counter_pattern", "must be 1 to %d bytes, got %d", MaxNameLen, len(r.Pattern))
		case r.Limit < 0:
			return invalid("counter_limit", "must not be negative, got %d", r.Limit)
		case r.Window < 0:
			return invalid("counter_window", "must not be negative, got %v", r.Window)
		}
	}
	return nil
}

// empty reports whether no string kind is configured (discovery then skips
// the string pass entirely).
func (p ObjectPatterns) empty() bool { return len(p.TokenLocks) == 0 && len(p.Counters) == 0 }

// isTokenLockName reports whether name is configured as a token lock.
func (p ObjectPatterns) isTokenLockName(name string) bool {
	for _, pat := range p.TokenLocks {
		if globMatch(pat, name) {
			return true
		}
	}
	return false
}

// counterRule returns the first counter rule matching name.
func (p ObjectPatterns) counterRule(name string) (CounterRule, bool) {
	for _, r := range p.Counters {
		if globMatch(r.Pattern, name) {
			return r, true
		}
	}
	return CounterRule{}, false
}

// clone copies the slices, so a caller that keeps and changes its own
// cannot change what a Client uses.
func (p ObjectPatterns) clone() *ObjectPatterns {
	p.TokenLocks = append([]string(nil), p.TokenLocks...)
	p.Counters = append([]CounterRule(nil), p.Counters...)
	return &p
}

// SetObjectPatterns replaces the patterns of Options.Patterns: which string
// keys c treats as token locks and which as access counters. Invalid
// patterns are a *ValidationError and change nothing.
func (c *Client) SetObjectPatterns(p ObjectPatterns) error {
	if err := p.Validate(); err != nil {
		return err
	}
	c.patterns.Store(p.clone())
	return nil
}

// ObjectPatterns returns the patterns in use.
func (c *Client) ObjectPatterns() ObjectPatterns {
	if p := c.patterns.Load(); p != nil {
		return *p
	}
	return ObjectPatterns{}
}

// globMatch matches s against a Redis glob pattern: '*' any run, '?' one
// byte, "[abc]", "[^a-z]" classes, and '\' escaping the next byte, like
// SCAN MATCH. It backtracks only to the last '*', so it runs in
// O(len(pattern) * len(s)).
func globMatch(pattern, s string) bool {
	p, i := 0, 0
	starP, starI := -1, 0
	for i < len(s) {
		if p < len(pattern) {
			switch c := pattern[p]; c {
			case '*':
				starP, starI = p, i
				p++
				continue
			case '?':
				p++
				i++
				continue
			case '[':
				if n, ok := matchClass(pattern[p:], s[i]); n > 0 {
					if ok {
						p += n
						i++
						continue
					}
				} else if s[i] == '[' { // unterminated class: a literal '['
					p++
					i++
					continue
				}
			case '\\':
				if p+1 < len(pattern) && pattern[p+1] == s[i] {
					p += 2
					i++
					continue
				}
			default:
				if c == s[i] {
					p++
					i++
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		starI++
		p, i = starP+1, starI
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// matchClass matches b against the class at the start of pat ("[...]").
// n is the length of the class in pat, 0 when it is not terminated.
func matchClass(pat string, b byte) (n int, ok bool) {
	j := 1
	negate := false
	if j < len(pat) && pat[j] == '^' {
		negate = true
		j++
	}
	matched := false
	for ; j < len(pat) && pat[j] != ']'; j++ {
		switch {
		case pat[j] == '\\' && j+1 < len(pat):
			j++
			if pat[j] == b {
				matched = true
			}
		case j+2 < len(pat) && pat[j+1] == '-' && pat[j+2] != ']':
			lo, hi := pat[j], pat[j+2]
			if lo > hi {
				lo, hi = hi, lo
			}
			if lo <= b && b <= hi {
				matched = true
			}
			j += 2
		default:
			if pat[j] == b {
				matched = true
			}
		}
	}
	if j >= len(pat) {
		return 0, false
	}
	return j + 1, matched != negate
}

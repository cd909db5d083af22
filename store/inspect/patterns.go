package inspect

import (
	"sync"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect/conv"
	"github.com/lockwarden/lockwarden/store/internal/wire"
)

// Token locks and access counters are plain strings: nothing in a value like
// "f3a9..." or "17" says "lock" or "counter", and a console that guessed
// would offer to delete an application's cache entries. So lockwarden only
// treats a string as one of them when its name matches a pattern the
// operator configured for that kind.

// CounterRule says which string keys are INCR+EXPIRE access counters and, when
// known, the limit the application enforces on them.
type CounterRule struct {
	// Pattern is a Redis glob (as for SCAN MATCH), e.g. "ip:limit:*".
	Pattern string
	// Limit is the most hits a window admits;
	// 0 when lockwarden is not told.
	Limit int64
	// Window is the window length; 0 when unknown.
	Window time.Duration
}

// ObjectPatterns configures string-based kinds for discovery and the console.
type ObjectPatterns struct {
	// TokenLocks are Redis globs of keys written with SET NX PX <token>
	// and released by compare-and-delete.
	TokenLocks []string
	// Counters are the INCR+EXPIRE access counters.
	Counters []CounterRule
	// DeadlineLocks are Redis globs of timestamp locks: SETNX of
	// a deadline (epoch ms), taken over with GETSET once it has passed.
	DeadlineLocks []string
	// LaravelPrefixes are the key prefixes (connection and cache prefix
	// together) of Laravel applications whose prefixes are not derived
	// from the app name; the derived ones are recognised without them.
	LaravelPrefixes []string
	// SpringRegistries are the registry keys of Spring Integration
	// RedisLockRegistry instances: their locks are "<key>:<lock>".
	SpringRegistries []string
	// DotnetLocks are Redis globs of DistributedLock.Redis lock keys.
	DotnetLocks []string
	// GroupCounters makes the keys of each counter pattern one family
	// (families.go): discovery leaves them out of the limiters and a
	// family.Reader reads them in bounded pages instead.
	GroupCounters bool

	// announced are the names store clients announced as token locks or
	// counters (the Inspector's, set by ObjectPatterns): they are read as
	// that kind like a configured pattern's names.
	announced *announcedKinds
	// conv remembers the convention kind of names classified as one (the
	// Inspector's, set by ObjectPatterns).
	conv *conv.Memo
}

// announcedKinds maps the names store clients announced with a string
// kind to that kind (wire.AnnounceTokenLock or wire.AnnounceCounter).
// The walk adds names as their announcements arrive (Announce) and drops
// them once they are neither sampled nor being read (RetainAnnounced).
type announcedKinds struct {
	m sync.Map // name -> kind
}

func (a *announcedKinds) kind(name string) string {
	if a == nil {
		return ""
	}
	if k, ok := a.m.Load(name); ok {
		return k.(string)
	}
	return ""
}

func (a *announcedKinds) set(name, kind string) { a.m.Store(name, kind) }

// retain drops the names keep rejects.
func (a *announcedKinds) retain(keep func(name string) bool) {
	a.m.Range(func(k, _ any) bool {
		if !keep(k.(string)) {
			a.m.Delete(k)
		}
		return true
	})
}

// MaxPatterns bounds each list of ObjectPatterns.
const MaxPatterns = 64

// Validate checks p as New and SetObjectPatterns would: at most
// MaxPatterns per kind, non-empty patterns of at most store.MaxNameLen bytes,
// no negative limit or window. The error is a *store.ValidationError.
func (p ObjectPatterns) Validate() error {
	if len(p.TokenLocks) > MaxPatterns || len(p.Counters) > MaxPatterns || len(p.DeadlineLocks) > MaxPatterns ||
		len(p.LaravelPrefixes) > MaxPatterns || len(p.SpringRegistries) > MaxPatterns || len(p.DotnetLocks) > MaxPatterns {
		return invalid("patterns", "at most %d per kind", MaxPatterns)
	}
	for field, list := range map[string][]string{"laravel_prefix": p.LaravelPrefixes, "spring_lock_registry": p.SpringRegistries, "dotnet_lock_pattern": p.DotnetLocks} {
		for _, s := range list {
			if s == "" || len(s) > store.MaxNameLen {
				return invalid(field, "must be 1 to %d bytes, got %d", store.MaxNameLen, len(s))
			}
		}
	}
	for _, s := range p.TokenLocks {
		if s == "" || len(s) > store.MaxNameLen {
			return invalid("token_lock_pattern", "must be 1 to %d bytes, got %d", store.MaxNameLen, len(s))
		}
	}
	for _, s := range p.DeadlineLocks {
		if s == "" || len(s) > store.MaxNameLen {
			return invalid("deadline_lock_pattern", "must be 1 to %d bytes, got %d", store.MaxNameLen, len(s))
		}
	}
	for _, r := range p.Counters {
		switch {
		case r.Pattern == "" || len(r.Pattern) > store.MaxNameLen:
			return invalid("counter_pattern", "must be 1 to %d bytes, got %d", store.MaxNameLen, len(r.Pattern))
		case r.Limit < 0:
			return invalid("counter_limit", "must not be negative, got %d", r.Limit)
		case r.Window < 0:
			return invalid("counter_window", "must not be negative, got %v", r.Window)
		}
	}
	return nil
}

// ListsStrings reports whether any string kind is listed one key a row:
// token or deadline lock patterns, or counter patterns not grouped into
// families. Without them discovery skips the string pass entirely.
func (p ObjectPatterns) ListsStrings() bool {
	return len(p.TokenLocks) > 0 || (len(p.Counters) > 0 && !p.GroupCounters) || len(p.DeadlineLocks) > 0
}

// ListsString reports whether the string key name is an object listed one
// key a row: a token or deadline lock, or a counter not grouped into a
// family.
func (p ObjectPatterns) ListsString(name string) bool {
	_, counter := p.counterRule(name)
	return (counter && !p.Grouped(name)) || p.isTokenLockName(name)
}

// isTokenLockName reports whether name is configured as a string lock: a
// token lock or a deadline lock. Both are read the same way (the value is
// the holder), so discovery and sampling need not tell them apart;
// classifyString does.
func (p ObjectPatterns) isTokenLockName(name string) bool {
	for _, pat := range p.TokenLocks {
		if GlobMatch(pat, name) {
			return true
		}
	}
	return p.isDeadlineLockName(name) || p.announced.kind(name) == wire.AnnounceTokenLock
}

// isDeadlineLockName reports whether name is configured as a deadline lock.
func (p ObjectPatterns) isDeadlineLockName(name string) bool {
	for _, pat := range p.DeadlineLocks {
		if GlobMatch(pat, name) {
			return true
		}
	}
	return false
}

// counterRule returns the first counter rule matching name.
func (p ObjectPatterns) counterRule(name string) (CounterRule, bool) {
	for _, r := range p.Counters {
		if GlobMatch(r.Pattern, name) {
			return r, true
		}
	}
	if p.announced.kind(name) == wire.AnnounceCounter {
		return CounterRule{Pattern: name}, true // its limit is the application's
	}
	return CounterRule{}, false
}

// clone copies the slices, so a caller that keeps and changes its own
// cannot change what a Client uses.
func (p ObjectPatterns) clone() *ObjectPatterns {
	p.TokenLocks = append([]string(nil), p.TokenLocks...)
	p.Counters = append([]CounterRule(nil), p.Counters...)
	p.DeadlineLocks = append([]string(nil), p.DeadlineLocks...)
	p.LaravelPrefixes = append([]string(nil), p.LaravelPrefixes...)
	p.SpringRegistries = append([]string(nil), p.SpringRegistries...)
	p.DotnetLocks = append([]string(nil), p.DotnetLocks...)
	return &p
}

// SetObjectPatterns replaces the patterns of Options.Patterns: which string
// keys c treats as token locks and which as access counters. Invalid
// patterns are a *store.ValidationError and change nothing.
func (c *Inspector) SetObjectPatterns(p ObjectPatterns) error {
	if err := p.Validate(); err != nil {
		return err
	}
	c.patterns.Store(p.clone())
	return nil
}

// ObjectPatterns returns the patterns in use.
func (c *Inspector) ObjectPatterns() ObjectPatterns {
	var out ObjectPatterns
	if p := c.patterns.Load(); p != nil {
		out = *p
	}
	out.announced = &c.announced
	out.conv = &c.conv
	return out
}

// Announce records that a store client announced name as a string kind
// (wire.AnnounceTokenLock or wire.AnnounceCounter): c then reads it as
// that kind, like a name a pattern lists.
func (c *Inspector) Announce(name, kind string) { c.announced.set(name, kind) }

// RetainAnnounced forgets the announced names keep rejects.
func (c *Inspector) RetainAnnounced(keep func(name string) bool) { c.announced.retain(keep) }

// ReadsString reports whether discovery reads the string key name to
// classify it: a pattern lists it, or a framework convention claims its
// name (package conv). Any other string is never transferred.
func (p ObjectPatterns) ReadsString(name string) bool {
	return p.ListsString(name) || p.claimsString(name)
}

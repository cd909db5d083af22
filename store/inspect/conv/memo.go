package conv

import (
	"sort"
	"sync"
	"sync/atomic"
)

// Memo remembers the convention of the names classified as one, so a
// sample reads each with its own layout's read (a Symfony lock is a zset
// under any name), and what some conventions need of earlier reads.
// Bounded: past MaxMemo names, new ones are read by their name's claims
// alone. The zero Memo is ready; a nil one remembers nothing.
type Memo struct {
	m sync.Map // name -> *Convention
	n atomic.Int64
	// expiry is what ShedLock's state needs of the last read.
	expiry sync.Map // name -> value and expiry seen
	// domains are the Envoy domains discovery met (envoy.go).
	domains  sync.Map // domain -> struct{}
	nDomains atomic.Int64
	// expressSeen: discovery met express-rate-limit's counters (express.go).
	expressSeen atomic.Bool
}

// MaxMemo bounds the names a Memo remembers.
const MaxMemo = 100_000

// Of is the convention remembered for name; nil if none.
func (m *Memo) Of(name string) *Convention {
	if m == nil {
		return nil
	}
	if c, ok := m.m.Load(name); ok {
		return c.(*Convention)
	}
	return nil
}

// Full reports whether m remembers MaxMemo names.
func (m *Memo) Full() bool { return m != nil && m.n.Load() >= MaxMemo }

// Set remembers that name holds c (nil: nothing to remember).
func (m *Memo) Set(name string, c *Convention) {
	if m == nil || c == nil {
		return
	}
	if old, loaded := m.m.Load(name); loaded && old.(*Convention) == c {
		return
	}
	if m.Full() {
		return
	}
	if _, loaded := m.m.Swap(name, c); !loaded {
		m.n.Add(1)
	}
}

// Forget forgets name.
func (m *Memo) Forget(name string) {
	if m == nil {
		return
	}
	if _, loaded := m.m.LoadAndDelete(name); loaded {
		m.n.Add(-1)
	}
	m.expiry.Delete(name)
}

// NoteEnvoyDomain remembers a domain discovery met, up to limit domains:
// its windows are read as a family, not listed one key a row.
func (m *Memo) NoteEnvoyDomain(domain string, limit int) {
	if m == nil {
		return
	}
	if _, loaded := m.domains.Load(domain); loaded || m.nDomains.Load() >= int64(limit) {
		return
	}
	if _, loaded := m.domains.LoadOrStore(domain, struct{}{}); !loaded {
		m.nDomains.Add(1)
	}
}

// EnvoyDomains are the domains met, sorted.
func (m *Memo) EnvoyDomains() []string {
	var out []string
	m.domains.Range(func(k, _ any) bool {
		out = append(out, k.(string))
		return true
	})
	sort.Strings(out)
	return out
}

// NoteExpress remembers that discovery met express-rate-limit's counters.
func (m *Memo) NoteExpress() {
	if m != nil {
		m.expressSeen.Store(true)
	}
}

// ExpressSeen reports whether discovery met express-rate-limit's counters.
func (m *Memo) ExpressSeen() bool { return m.expressSeen.Load() }

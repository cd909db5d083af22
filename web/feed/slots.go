package feed

import (
	"sync"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// adminSlots: admins' websockets, kept apart from the viewers' cap so
// that a viewer's flood never locks an admin out.
const adminSlots = 32

// Slots admits websockets before Connect: viewers up to a total and a
// per-address cap, admins in slots of their own.
type Slots struct {
	mu                    sync.Mutex
	viewers, admins       int
	maxViewers, perSource int
	bySource              map[string]int
}

// NewSlots admits maxViewers viewers (DefaultMaxClients when not
// positive), at most perSource of them from one address.
func NewSlots(maxViewers, perSource int) *Slots {
	if maxViewers <= 0 {
		maxViewers = DefaultMaxClients
	}
	return &Slots{maxViewers: maxViewers, perSource: perSource, bySource: map[string]int{}}
}

// Take reserves a slot for a connection from source and returns its
// release (call once), or a CodeLimited (this address) or CodeUnavailable
// (everyone) error saying which cap was hit. admin takes an admin slot (in
// local mode everyone is an admin, so nobody does).
func (w *Slots) Take(admin bool, source string) (func(), error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if admin {
		if w.admins >= adminSlots {
			return nil, inspect.Errorf(inspect.CodeUnavailable, "too many admin connections; close one")
		}
		w.admins++
		return w.releaser(func() { w.admins-- }), nil
	}
	switch {
	case w.bySource[source] >= w.perSource:
		return nil, inspect.Errorf(inspect.CodeLimited, "too many live connections from this address; close one (at most %d)", w.perSource)
	case w.viewers >= w.maxViewers:
		return nil, inspect.Errorf(inspect.CodeUnavailable, "too many live viewers; try again later")
	}
	w.viewers++
	w.bySource[source]++
	return w.releaser(func() {
		w.viewers--
		if w.bySource[source]--; w.bySource[source] <= 0 {
			delete(w.bySource, source)
		}
	}), nil
}

func (w *Slots) releaser(undo func()) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			undo()
		})
	}
}

// Active is how many connections hold a slot.
func (w *Slots) Active() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.viewers + w.admins
}

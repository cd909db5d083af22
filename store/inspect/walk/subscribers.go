package walk

import "github.com/lockwarden/lockwarden/store/inspect"

// The walk's side of counting Redisson waiters (subscribers.go says how
// they are counted): which held locks a tick counts, and what a count
// changes.

// maxCountedPerTick bounds the channels one tick counts.
const maxCountedPerTick = 32

// countDue picks this tick's share of the held locks whose waiters only a
// count can show, at most n: lock name -> its channel.
func (c *cadence) countDue(n int) map[string]string {
	var held []string
	for name, st := range c.objs {
		if l := st.lock; l != nil && len(l.Holders) > 0 && l.Channel != "" &&
			(l.Kind == inspect.KindReentrant || l.Kind == inspect.KindFencedLock || l.Kind == inspect.KindRWLock) {
			held = append(held, name)
		}
	}
	turns := int64((len(held) + n - 1) / max(n, 1))
	out := make(map[string]string, min(len(held), n))
	for _, name := range held {
		if turns <= 1 || ((int64(nameHash(name))+c.tick)%turns == 0 && len(out) < n) {
			out[name] = c.objs[name].lock.Channel
		}
	}
	return out
}

// countsRead applies a tick's counts to its locks and makes those whose
// count changed busy.
func (w *Walker) countsRead(locks []inspect.LockInfo, fresh map[string]int64) {
	for _, n := range w.subs.apply(locks, fresh) {
		w.cad.touch(n)
	}
}

// subscriberMemo keeps each held lock's last count between its turns.
type subscriberMemo map[string]int64

// apply records fresh counts and sets Subscribers on every held lock of
// locks that has one, less the store clients queued for it; a lock no
// longer held forgets its count. It returns the locks whose count changed
// (or is first seen above zero): someone began or stopped waiting, which
// an idle lock's hash does not show, so the walker reads them next tick.
func (m subscriberMemo) apply(locks []inspect.LockInfo, fresh map[string]int64) (changed []string) {
	for name, n := range fresh {
		if old, ok := m[name]; (ok && old != n) || (!ok && n > 0) {
			changed = append(changed, name)
		}
		m[name] = n
	}
	seen := make(map[string]bool, len(m))
	for i := range locks {
		l := &locks[i]
		n, ok := m[l.Name]
		if !ok {
			continue
		}
		if len(l.Holders) == 0 {
			delete(m, l.Name)
			continue
		}
		seen[l.Name] = true
		n -= storeClientsQueued(*l)
		if n > 0 {
			l.Subscribers = &n
		} else {
			l.Subscribers = nil
		}
	}
	for name := range m {
		if !seen[name] {
			delete(m, name)
		}
	}
	return changed
}

// storeClientsQueued is how many store clients wait in l's hand-off queue
// (each holds one subscription to the lock's channel however many of its
// Lock calls wait).
func storeClientsQueued(l inspect.LockInfo) int64 {
	ids := map[string]bool{}
	for _, w := range l.Waiters {
		if w.ArrivedMS > 0 {
			ids[inspect.ClientIDOf(w.Owner)] = true
		}
	}
	return int64(len(ids))
}

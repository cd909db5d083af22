package live

import (
	"context"
	"sync"
	"sync/atomic"
)

// Detached runs an observer on a goroutine of its own, so that whatever it
// does with a snapshot (the history's feed turns every lock and limiter of
// it into a sample) never holds up the tick that follows, nor the frames
// the observers after it send. It is handed the newest snapshot only:
// when the observer is still busy with one, a newer one replaces the one
// waiting, and the replaced one is counted in Skipped. The snapshots are
// immutable, so sharing them across goroutines needs nothing more.
type Detached struct {
	o    Observer
	mu   sync.Mutex
	next *Snapshot // the newest snapshot not yet handed on
	wake chan struct{}
	// skipped counts the snapshots replaced before the observer took them.
	skipped atomic.Int64
}

// Detach wraps o; o sees nothing until Run.
func Detach(o Observer) *Detached {
	return &Detached{o: o, wake: make(chan struct{}, 1)}
}

// Observe keeps sn for the observer's goroutine and returns at once.
func (d *Detached) Observe(sn *Snapshot) {
	d.mu.Lock()
	if d.next != nil {
		d.skipped.Add(1)
	}
	d.next = sn
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default: // already woken: it takes d.next, now sn
	}
}

// Skipped is how many snapshots the observer never saw: newer ones came
// while it was busy.
func (d *Detached) Skipped() int64 { return d.skipped.Load() }

// Run hands the observer the newest snapshot each time one comes, until
// ctx ends.
func (d *Detached) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
		}
		d.mu.Lock()
		sn := d.next
		d.next = nil
		d.mu.Unlock()
		if sn != nil {
			d.o.Observe(sn)
		}
	}
}

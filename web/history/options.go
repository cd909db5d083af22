package history

import (
	"errors"
	"fmt"
	"time"
)

// Step sizes of the two limiter resolutions. Spans are read at one of them.
const (
	FineStep   = 10 * time.Second
	CoarseStep = time.Minute
)

// Defaults of Options.
const (
	DefaultFineRetention   = time.Hour
	DefaultCoarseRetention = 24 * time.Hour
	DefaultTop             = 250
	DefaultHoldsPerLock    = 32
	DefaultLease           = 30 * time.Second
	DefaultHalfLife        = time.Hour
	// DefaultQueue is how many samples may wait for the history's
	// goroutine before Observe drops them (counted in Stats.Dropped).
	DefaultQueue = 64
)

// Options tunes a History. A nil *Options, and zero fields, mean the defaults.
type Options struct {
	// FineRetention is how far back the 10 s steps go (the "1h" span).
	FineRetention time.Duration
	// CoarseRetention is how far back the 1 min steps go (the "24h" span).
	CoarseRetention time.Duration
	// Top is how many limiters, and how many locks, are kept (the
	// --history-top flag); beyond them nothing is kept.
	Top int
	// HoldsPerLock bounds the ended holds kept per lock.
	HoldsPerLock int
	// Lease is the writer lock's lease: how long a crashed writer keeps
	// the others from writing. Readers try to take over every Lease/3.
	Lease time.Duration
	// HalfLife is how fast an object's busyness score forgets.
	HalfLife time.Duration
	// ID names this replica in the meta key. Default: random.
	ID string
	// Queue is the sample queue length. Default DefaultQueue.
	Queue int
}

// ErrOptions is matched by every invalid option Open reports.
var ErrOptions = errors.New("history: invalid options")

type resolved struct {
	fine, coarse   time.Duration
	top, holds     int
	lease, half    time.Duration
	id             string
	queue          int
	nFine, nCoarse int // ring lengths in steps
}

func (o *Options) resolve() (resolved, error) {
	r := resolved{fine: DefaultFineRetention, coarse: DefaultCoarseRetention, top: DefaultTop,
		holds: DefaultHoldsPerLock, lease: DefaultLease, half: DefaultHalfLife, queue: DefaultQueue}
	if o != nil {
		set(&r.fine, o.FineRetention)
		set(&r.coarse, o.CoarseRetention)
		set(&r.top, o.Top)
		set(&r.holds, o.HoldsPerLock)
		set(&r.lease, o.Lease)
		set(&r.half, o.HalfLife)
		set(&r.id, o.ID)
		set(&r.queue, o.Queue)
	}
	switch {
	case r.fine < FineStep || r.fine%FineStep != 0:
		return r, fmt.Errorf("%w: FineRetention must be a positive multiple of %v, got %v", ErrOptions, FineStep, r.fine)
	case r.coarse < CoarseStep || r.coarse%CoarseStep != 0:
		return r, fmt.Errorf("%w: CoarseRetention must be a positive multiple of %v, got %v", ErrOptions, CoarseStep, r.coarse)
	case r.top < 0 || r.holds < 0 || r.queue < 0:
		return r, fmt.Errorf("%w: Top, HoldsPerLock and Queue must not be negative", ErrOptions)
	case r.lease < time.Millisecond || r.half < 0:
		return r, fmt.Errorf("%w: Lease must be at least 1ms and HalfLife not negative", ErrOptions)
	}
	r.nFine, r.nCoarse = int(r.fine/FineStep), int(r.coarse/CoarseStep)
	return r, nil
}

// set replaces *dst with v unless v is the zero value.
func set[T comparable](dst *T, v T) {
	var zero T
	if v != zero {
		*dst = v
	}
}

package history

import (
	"errors"
	"fmt"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/inspect/whatif"
)

// Sample is what the console's tick hands to Observe. Observe takes
// ownership of its slices.
type Sample struct {
	// At is the sample's Redis time.
	At time.Time
	// Limiters are the attempts each limiter counted since the previous
	// sample that carried limiters (a completed 1 s or 10 s slice ending
	// at At); limiters with no attempts may be left out.
	Limiters []LimiterSample
	// Locks is every lock the console knows at At, held or not; a lock
	// left out is gone (its key vanished).
	Locks []LockSample
}

// LimiterSample is one limiter's attempts over a slice.
type LimiterSample struct {
	Name, Kind                 string
	Acquired, Rejected, Errors int64
}

// LockSample is one lock at a sample.
type LockSample struct {
	Name, Kind string
	Holders    []Holder
	// PTTL is the lock's remaining lease; negative when it has none.
	PTTL time.Duration
	// Waiters is how many wait for it (contention ranks a lock).
	Waiters int64
	// Wait is what the lock's scripts recorded since the previous sample.
	Wait WaitSample
}

// Holder is one holder of a lock as the console identifies it.
type Holder struct {
	ID        string // the hash field "<client-uuid>:<owner>", or a token
	App, Host string
	PID       int
	// Since is when the hold began, when the lock's scripts recorded it;
	// zero means "first seen at this sample".
	Since time.Time
	// Mode is a read-write lock holder's "read" or "write" (readers share
	// a hold); "" for the other kinds, whose holds are all exclusive.
	Mode string
}

// How a hold ended.
const (
	EndReleased      = "released"
	EndHandedOff     = "handed-off" // the next holder appeared in the same or the next sample
	EndExpired       = "expired"    // the lease ran out while held
	EndForceUnlocked = "force-unlocked"
	EndEvicted       = "evicted" // Redis evicted the lock's key (maxmemory) while held
)

// Point is one step of a limiter's history; T is the step's start in Unix
// seconds.
type Point struct {
	T        int64 `json:"t"`
	Acquired int64 `json:"acquired"`
	Rejected int64 `json:"rejected"`
	Errors   int64 `json:"errors"`
}

// LimiterHistory is a limiter's attempts over a span, one point per step,
// oldest first, ending at the newest flushed step. Kept is false when the
// limiter is not among the busiest (its points are then all zero).
type LimiterHistory struct {
	StepS  int64   `json:"step_s"`
	Points []Point `json:"points"`
	Kept   bool    `json:"kept"`
}

// Demand is the steps with attempts as a what-if demand series: what the
// limiter was asked for, replayed at other settings. A step counts the
// stats buckets complete at its last sample, a bucket behind the sample
// (Recorder.limiterSamples), so it lags them by one, or two when a tick came
// late.
func (lh LimiterHistory) Demand() whatif.Series {
	d := whatif.Series{StepMS: lh.StepS * 1000, Points: make([]whatif.Point, 0, len(lh.Points)),
		LagMS: inspect.BucketMS, EdgeMS: inspect.BucketMS}
	for _, p := range lh.Points {
		if p.Acquired+p.Rejected+p.Errors == 0 {
			continue
		}
		d.Points = append(d.Points, whatif.Point{T: time.Unix(p.T, 0).UTC(),
			Counts: inspect.Counts{Acquired: p.Acquired, Rejected: p.Rejected, Errors: p.Errors}})
	}
	return d
}

// Client is the application a holder belongs to.
type Client struct {
	App  string `json:"app"`
	Host string `json:"host"`
	PID  int    `json:"pid"`
}

// Hold is one holder's hold of a lock. A running hold has no To and no
// Ended.
type Hold struct {
	Holder string    `json:"holder"`
	Client *Client   `json:"client,omitempty"`
	Mode   string    `json:"mode,omitempty"` // Holder.Mode
	From   time.Time `json:"from"`
	To     time.Time `json:"to,omitzero"`
	Ended  string    `json:"ended,omitempty"`
	// WorkedTo is when the holder was last heard working on an ended hold
	// past its end (a release or renewal its lock's scripts refused as
	// late, web/live's released-after-expiry): the hold as its holder
	// lived it runs to here, over whoever held the lock after.
	WorkedTo time.Time `json:"worked_to,omitzero"`
}

// Shared says h is a read hold, which other readers share: two holds
// at once break exclusion unless both are shared.
func (h Hold) Shared() bool { return h.Mode == ModeRead }

// ModeRead is a read-write lock reader's Holder.Mode.
const ModeRead = "read"

// WaitSample is a lock's acquisitions and waits since the sample before
// (store/inspect's wait totals, differenced by the caller).
type WaitSample struct {
	Acquired  int64
	Contended int64 // acquisitions that waited: the sum of Classes
	TotalMS   int64
	// MaxMS is the longest wait seen in the slice; Classes count the waits
	// by inspect.WaitClassBoundsMS.
	MaxMS   int64
	Classes [inspect.WaitClasses]int64
}

func (w *WaitSample) zero() bool { return w.Acquired == 0 && w.Contended == 0 }

// WaitPoint is one minute of a lock's waits; T is the minute's start in
// Unix seconds. P50MS and P99MS are the bounds of the histogram classes
// the quantiles fall in, never above MaxMS (as store/inspect reads them).
type WaitPoint struct {
	T         int64 `json:"t"`
	Acquired  int64 `json:"acquired"`
	Contended int64 `json:"contended"`
	TotalMS   int64 `json:"total_ms"`
	P50MS     int64 `json:"p50_ms"`
	P99MS     int64 `json:"p99_ms"`
	MaxMS     int64 `json:"max_ms"`
}

// LockHistory is a lock's holds that overlap a span, running ones first,
// then ended ones newest first, and its waits per minute over the span
// (minutes with acquisitions only, oldest first).
type LockHistory struct {
	Holds []Hold      `json:"holds"`
	Wait  []WaitPoint `json:"wait"`
	Kept  bool        `json:"kept"`
}

// Spans a history read accepts.
const (
	SpanHour = "1h"  // FineStep points
	SpanDay  = "24h" // CoarseStep points
)

// badParam is a read parameter refused (CodeInvalid naming it).
func badParam(param, value, want string) *inspect.Error {
	return &inspect.Error{Code: inspect.CodeInvalid, Field: param, Message: param + " must be " + want,
		Err: fmt.Errorf("history: %s %q", param, value)}
}

// ErrClosed: the History was closed.
var ErrClosed = errors.New("history: closed")

// spanStep returns the step and point count a span is read at.
func (r resolved) spanStep(span string) (step time.Duration, n int, err error) {
	switch span {
	case SpanHour:
		return FineStep, min(int(time.Hour/FineStep), r.nFine), nil
	case SpanDay:
		return CoarseStep, min(int(24*time.Hour/CoarseStep), r.nCoarse), nil
	}
	return 0, 0, badParam("span", span, SpanHour+" or "+SpanDay)
}

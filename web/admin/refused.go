package admin

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// RefusedLog writes refused and unauthenticated requests to their own
// capped trail (inspect.RefusedAuditKey), never to the change trail, so a
// flood of them evicts only its own kind. Records are throttled per source
// address and overall; what the throttle holds back is counted, and
// Flush writes one summary record per source for it, so a flood shows in
// the trail as its size, not as silence.
type RefusedLog struct {
	trail *inspect.Audit

	written, suppressed atomic.Uint64

	mu      sync.Mutex
	all     refusedBucket
	sources map[string]*sourceState
}

type sourceState struct {
	b          refusedBucket
	held       int // records held back since the last Flush
	first, end time.Time
}

// Throttle settings: a source may write a burst of 10 records and then
// one a second; all sources together 100 and then 20 a second.
const (
	sourceBurst, sourceRate = 10, 1.0
	allBurst, allRate       = 100, 20.0
	// maxSources bounds the per-source state; past it the overall
	// bucket alone decides, and held records count under OtherSources.
	maxSources   = 4096
	OtherSources = "other"
)

// NewRefusedLog writes to trail.
func NewRefusedLog(trail *inspect.Audit) *RefusedLog {
	return &RefusedLog{trail: trail, all: newRefusedBucket(allBurst, allRate), sources: map[string]*sourceState{}}
}

// Trail is the capped trail written to.
func (l *RefusedLog) Trail() *inspect.Audit { return l.trail }

// Record writes rec unless its source (rec.Remote) or everyone together
// is over the throttle, in which case it is counted for the next Flush.
func (l *RefusedLog) Record(ctx context.Context, rec inspect.AuditRecord, now time.Time) error {
	if !l.admit(rec.Remote, now) {
		l.suppressed.Add(1)
		return nil
	}
	return l.write(ctx, rec)
}

// Summary writes rec unthrottled: for summaries other parts keep (failed
// sign-ins), which are already one record per source and interval.
func (l *RefusedLog) Summary(ctx context.Context, rec inspect.AuditRecord) error {
	return l.write(ctx, rec)
}

func (l *RefusedLog) write(ctx context.Context, rec inspect.AuditRecord) error {
	if _, err := l.trail.Append(ctx, rec); err != nil {
		return err
	}
	l.written.Add(1)
	return nil
}

func (l *RefusedLog) admit(source string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.sources[source]
	if s == nil {
		if len(l.sources) >= maxSources {
			l.evictIdle(now)
		}
		if len(l.sources) >= maxSources {
			source = OtherSources
			s = l.sources[source]
		}
		if s == nil {
			s = &sourceState{b: newRefusedBucket(sourceBurst, sourceRate)}
			l.sources[source] = s
		}
	}
	if s.b.take(now) && l.all.take(now) {
		return true
	}
	if s.held == 0 {
		s.first = now
	}
	s.held++
	s.end = now
	return false
}

// evictIdle drops sources whose bucket is full again and that hold
// nothing back: they are as if never seen.
func (l *RefusedLog) evictIdle(now time.Time) {
	for k, s := range l.sources {
		if s.held == 0 && s.b.full(now) {
			delete(l.sources, k)
		}
	}
}

// Flush writes one record per source whose records were held back since
// the last Flush, saying how many and over what span.
func (l *RefusedLog) Flush(ctx context.Context) error {
	type held struct {
		source     string
		n          int
		first, end time.Time
	}
	var out []held
	l.mu.Lock()
	for k, s := range l.sources {
		if s.held > 0 {
			out = append(out, held{k, s.held, s.first, s.end})
			s.held = 0
		}
	}
	l.mu.Unlock()
	var firstErr error
	for _, h := range out {
		err := l.write(ctx, inspect.AuditRecord{Remote: h.source, Action: "refused-requests", Outcome: inspect.OutcomeDenied,
			Detail: fmt.Sprintf("%d more refused requests from %s between %s and %s, not recorded one by one",
				h.n, h.source, h.first.UTC().Format(time.RFC3339), h.end.UTC().Format(time.RFC3339))})
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}

// Counts are the records written and held back since start, for /metrics.
func (l *RefusedLog) Counts() (written, suppressed uint64) {
	return l.written.Load(), l.suppressed.Load()
}

// refusedBucket is a token bucket: burst at once, then rate per second.
type refusedBucket struct {
	tokens, burst, rate float64
	last                time.Time
}

func newRefusedBucket(burst, rate float64) refusedBucket {
	return refusedBucket{tokens: burst, burst: burst, rate: rate}
}

func (b *refusedBucket) refill(now time.Time) {
	if !b.last.IsZero() && now.After(b.last) {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	}
	b.last = now
}

func (b *refusedBucket) take(now time.Time) bool {
	b.refill(now)
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

func (b *refusedBucket) full(now time.Time) bool {
	b.refill(now)
	return b.tokens >= b.burst
}

// RunSummaries writes into the refused trail, every `every` until ctx
// ends, what its throttle held back (Flush) and the records summaries
// returns (the failed sign-ins of each source since the last call). A
// Service without a refused trail writes nothing.
func (s *Service) RunSummaries(ctx context.Context, every time.Duration, summaries func() []inspect.AuditRecord) {
	if s.refused == nil {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.WriteSummaries(ctx, summaries)
		}
	}
}

// WriteSummaries writes now what RunSummaries writes on its ticks.
func (s *Service) WriteSummaries(ctx context.Context, summaries func() []inspect.AuditRecord) {
	if s.refused == nil {
		return
	}
	if err := s.refused.Flush(ctx); err != nil {
		s.log.Warn("refused-request summary failed", "err", err)
	}
	for _, rec := range summaries() {
		if err := s.refused.Summary(ctx, rec); err != nil {
			s.log.Warn("sign-in failure summary failed", "err", err)
		}
	}
}

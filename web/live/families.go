package live

import (
	"context"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// families reads the limiter families each tick, after the sample: a
// bounded page of members (inspect.FamilyReadsPerTick over all families,
// see store/inspect/families.go for the bound) in a pipeline of its own,
// so 100,000 per-IP counters cost a tick what 300 do. The rows it
// publishes are the families with at least one member read.
type families struct {
	reader *inspect.FamilyReader
	book   *inspect.FamilyBook
	// failing says the last read failed (logged once until one succeeds).
	failing bool
}

func (f *families) tick(ctx context.Context, sm *Sampler, smp *inspect.Sample, start time.Time) []inspect.FamilyRow {
	if f.reader == nil {
		f.reader, f.book = sm.insp.NewFamilyReader(sm.cfg.match()), inspect.NewFamilyBook()
	}
	fams := sm.insp.Families(smp.Limiters)
	f.book.Retain(fams)
	rs, err := f.reader.Tick(ctx, fams, start)
	if err != nil && !f.failing {
		sm.log.Warn("reading limiter families failed", "err", err)
	}
	f.failing = err != nil
	sm.walker.Charge(f.reader.Cost())
	f.book.Add(smp.At, rs)
	rows := f.book.Rows(smp.At, fams, f.reader.Sizes())
	out := rows[:0]
	for _, r := range rows {
		if r.Keys > 0 {
			out = append(out, r)
		}
	}
	return out
}

package bench

import (
	"context"
	"testing"
	"time"
)

// BenchmarkLockUncontended is case 1 at C=16 for each peer, for profiling
// with `go test -bench`; the report comes from TestBenchReport.
func BenchmarkLockUncontended(b *testing.B) {
	e := newEnv(b)
	for _, p := range lockPeers {
		b.Run(p.name, func(b *testing.B) {
			rate, err := uncontended(context.Background(), e, p, 16, time.Duration(b.N)*50*time.Microsecond)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(rate, "pairs/s")
		})
	}
}

package whatif

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// recordPaced rewrites pacedBucketsFile from real limiters:
// go test -run TestReplayAtEveryPhase ./store/inspect/whatif -record-paced
var recordPaced = flag.Bool("record-paced", false, "drive pacedDemand through real limiters and rewrite "+pacedBucketsFile)

// pacedBucketsFile holds the stats buckets real limiters of each kind
// recorded for pacedDemand (drivePaced on a real redis-server): each
// bucket's acquired and rejected counts, from the bucket numbered first.
// The last three were recorded with the driver stalled for 50 to 300 ms
// in some seconds (the attempts it could not make in time left out), as
// a loaded machine stalls it.
const pacedBucketsFile = "testdata/paced_buckets.json"

type recordedBuckets struct {
	Kind      inspect.Kind `json:"kind"`
	Algorithm string       `json:"algorithm,omitempty"`
	Current   Settings     `json:"current"`
	First     int64        `json:"first"`
	Counts    [][2]int64   `json:"counts"`
}

// TestReplayAtEveryPhase folds buckets recorded from real limiters into
// the history's 10 s steps at each of the 50 places the first bucket can
// fall in a step (the history's steps are aligned to the epoch, so
// traffic starts anywhere in one, and its last step, flushed while it
// fills, is anywhere from one bucket to a whole step long). Replayed at
// today's settings, every fold must give the rejections recorded within
// 2 % (or one rejection).
func TestReplayAtEveryPhase(t *testing.T) {
	if *recordPaced {
		writePacedBuckets(t)
	}
	data, err := os.ReadFile(pacedBucketsFile)
	if err != nil {
		t.Fatal(err)
	}
	var recs []recordedBuckets
	if err := json.Unmarshal(data, &recs); err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 {
		t.Fatalf("%s holds no buckets", pacedBucketsFile)
	}
	const perStep = 10_000 / inspect.BucketMS
	for i, r := range recs {
		t.Run(fmt.Sprintf("%d/%s", i, r.Kind), func(t *testing.T) {
			lim := Limiter{Kind: r.Kind, Algorithm: r.Algorithm, Current: r.Current}
			counts := make([]inspect.Counts, len(r.Counts))
			for k, c := range r.Counts {
				counts[k] = inspect.Counts{Acquired: c[0], Rejected: c[1]}
			}
			var worst float64
			for phase := range int64(perStep) {
				first := r.First/perStep*perStep + phase
				res, err := Replay(Request{Limiter: lim, Proposed: lim.Current, Demand: HistorySeries(first, counts, 10_000)})
				if err != nil {
					t.Fatal(err)
				}
				c := res.Check
				if c.Recorded < 30 {
					t.Fatalf("%d rejections recorded, want 30 or more", c.Recorded)
				}
				if d := c.Replayed - c.Recorded; !c.Trusted() && d*d > 1 {
					t.Errorf("first bucket %d of a 10 s step: replayed %d rejections at today's settings, recorded %d: %+.2f %%, want within 2 %%",
						phase, c.Replayed, c.Recorded, c.ErrorPct)
				}
				if abs := max(c.ErrorPct, -c.ErrorPct); abs > worst {
					worst = abs
				}
			}
			t.Logf("%s at %+v: worst error over %d phases %.2f %%", lim.Kind, lim.Current, perStep, worst)
		})
	}
}

// writePacedBuckets drives pacedDemand through each kind's limiter twice
// at once and writes today's limiter's buckets to pacedBucketsFile.
func writePacedBuckets(t *testing.T) {
	const times = 2
	recs := make([]recordedBuckets, len(pacedKinds)*times)
	var wg sync.WaitGroup
	for i := range recs {
		k := pacedKinds[i/times]
		prefix := fmt.Sprintf("%s%d:", redistest.Prefix(t), i)
		wg.Go(func() {
			buckets, info := drivePaced(t, prefix, k)
			if info == nil {
				return
			}
			first, counts := consecutive(buckets[0])
			r := recordedBuckets{Kind: k.kind, Algorithm: info.Algorithm, Current: k.settings[0], First: first}
			for _, c := range counts {
				r.Counts = append(r.Counts, [2]int64{c.Acquired, c.Rejected})
			}
			recs[i] = r
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// A record a line, so that a new recording reads as one in a diff.
	data := []byte("[\n")
	for i, r := range recs {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if data = append(data, line...); i < len(recs)-1 {
			data = append(data, ',')
		}
		data = append(data, '\n')
	}
	if err := os.WriteFile(pacedBucketsFile, append(data, "]\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
}

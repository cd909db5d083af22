package whatif

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// recordPaced adds recordings from real limiters to pacedBucketsFile:
// go test -run TestReplayAtEveryPhase ./store/inspect/whatif -record-paced
var recordPaced = flag.Bool("record-paced", false, "drive pacedDemand through real limiters and add what they recorded to "+pacedBucketsFile)

// pacedBucketsFile holds the stats buckets real limiters of each kind
// recorded for pacedDemand (drivePaced on a real redis-server): today's
// limiter's and its two twins', met by the same attempts, each bucket's
// acquired and rejected counts from the bucket numbered first. Half the
// records were made with the driver stalled as pacedStalls say (the
// attempts it could not make in time left out), as a loaded machine
// stalls it; the second recording ran on a machine loaded 10 times over
// its cores, so that its driver stalled on its own as well, the third
// beside this package's own tests.
const pacedBucketsFile = "testdata/paced_buckets.json"

// pacedStalls are the driver's stalls in the stalled recordings: in some
// seconds, for 50 to 300 ms from their middle.
var pacedStalls = []map[int]time.Duration{
	{1: 300 * time.Millisecond, 6: 120 * time.Millisecond, 9: 250 * time.Millisecond, 13: 80 * time.Millisecond,
		17: 200 * time.Millisecond, 21: 300 * time.Millisecond, 22: 50 * time.Millisecond},
	{2: 50 * time.Millisecond, 4: 200 * time.Millisecond, 8: 300 * time.Millisecond, 11: 150 * time.Millisecond,
		15: 300 * time.Millisecond, 19: 100 * time.Millisecond, 20: 250 * time.Millisecond},
}

type recordedBuckets struct {
	Kind      inspect.Kind `json:"kind"`
	Algorithm string       `json:"algorithm,omitempty"`
	Stalled   bool         `json:"stalled,omitempty"`
	Current   Settings     `json:"current"`
	First     int64        `json:"first"`
	Counts    [][2]int64   `json:"counts"`
	// Twins are the lower and the higher twin's buckets.
	Twins []twinBuckets `json:"twins"`
}

type twinBuckets struct {
	Settings Settings   `json:"settings"`
	First    int64      `json:"first"`
	Counts   [][2]int64 `json:"counts"`
}

func toCounts(cs [][2]int64) []inspect.Counts {
	counts := make([]inspect.Counts, len(cs))
	for k, c := range cs {
		counts[k] = inspect.Counts{Acquired: c[0], Rejected: c[1]}
	}
	return counts
}

func fromBuckets(buckets map[int64]inspect.Counts) (int64, [][2]int64) {
	first, counts := consecutive(buckets)
	out := make([][2]int64, len(counts))
	for k, c := range counts {
		out[k] = [2]int64{c.Acquired, c.Rejected}
	}
	return first, out
}

// TestReplayAtEveryPhase folds buckets recorded from real limiters into
// the history's 10 s steps at each of the 50 places the first bucket can
// fall in a step (the history's steps are aligned to the epoch, so
// traffic starts anywhere in one, and its last step, flushed while it
// fills, is anywhere from one bucket to a whole step long). Replayed at
// today's settings, every fold must give the rejections recorded within
// 2 % (or one rejection), and so must the 200 ms buckets themselves.
// Replayed at each twin's settings, every fold,
// and the 200 ms buckets themselves, must hold the twin's rejections,
// folded the same way, in the band (widened as TestReplayOfPacedTraffic
// widens it): the band spans every arrival within a step that today's
// record cannot tell apart.
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
		name := fmt.Sprintf("%d/%s", i, r.Kind)
		if r.Algorithm != "" {
			name += "/" + r.Algorithm
		}
		t.Run(name, func(t *testing.T) {
			lim := Limiter{Kind: r.Kind, Algorithm: r.Algorithm, Current: r.Current}
			counts := toCounts(r.Counts)
			if len(r.Twins) != 2 {
				t.Fatalf("%d twins recorded, want 2", len(r.Twins))
			}
			var worst float64
			var misses [2]int
			var widths [2][2]int64 // per twin: narrowest and widest band over 10 s steps
			fold := func(phase int64, first int64, counts []inspect.Counts) Series {
				if phase < 0 {
					return BucketSeries(first, counts)
				}
				return HistorySeries(first, counts, 10_000)
			}
			for phase := int64(-1); phase < perStep; phase++ {
				first := r.First
				if phase >= 0 {
					first = r.First/perStep*perStep + phase
				}
				f, err := Fit(lim, fold(phase, first, counts), Series{})
				if err != nil {
					t.Fatal(err)
				}
				res, err := f.Replay(lim.Current, 0)
				if err != nil {
					t.Fatal(err)
				}
				c := res.Check
				if c.Recorded < 30 {
					t.Fatalf("%d rejections recorded, want 30 or more", c.Recorded)
				}
				if d := c.Replayed - c.Recorded; !c.Trusted() && d*d > 1 {
					t.Errorf("first bucket %d of a 10 s step (-1: 200 ms steps): replayed %d rejections at today's settings, recorded %d: %+.2f %%, want within 2 %%",
						phase, c.Replayed, c.Recorded, c.ErrorPct)
				}
				worst = max(worst, c.ErrorPct, -c.ErrorPct)
				for k, tw := range r.Twins {
					twin := fold(phase, first+tw.First-r.First, toCounts(tw.Counts))
					got, err := f.Replay(tw.Settings, 0)
					if err != nil {
						t.Fatal(err)
					}
					if att := attempts(twin); att != got.Attempts {
						t.Fatalf("the twin at %+v met %d attempts, today's limiter %d", tw.Settings, att, got.Attempts)
					}
					p, rec := got.Predicted, recordedRejected(twin)
					switch w := p.High - p.Low; {
					case phase < 0:
					case phase == 0:
						widths[k] = [2]int64{w, w}
					default:
						widths[k] = [2]int64{min(widths[k][0], w), max(widths[k][1], w)}
					}
					if lo, hi := widen(p); rec < lo || rec > hi {
						misses[k]++
						t.Errorf("first bucket %d of a 10 s step (-1: 200 ms steps): the twin at %+v recorded %d rejections, predicted %d, outside the band %d to %d (within 2 %%: %d to %d)",
							phase, tw.Settings, rec, p.Rejected, p.Low, p.High, lo, hi)
					}
				}
			}
			t.Logf("%s at %+v: worst error over %d phases and the buckets %.2f %%", lim.Kind, lim.Current, perStep, worst)
			for k, tw := range r.Twins {
				t.Logf("twin at %+v: band %d to %d rejections wide over 10 s steps; %d folds of %d outside it",
					tw.Settings, widths[k][0], widths[k][1], misses[k], perStep+1)
			}
		})
	}
}

// writePacedBuckets drives pacedDemand through each kind's limiters four
// times at once, twice with the driver stalled (pacedStalls), and adds
// the buckets of today's limiter and its twins to those pacedBucketsFile
// holds.
func writePacedBuckets(t *testing.T) {
	var held []recordedBuckets
	if data, err := os.ReadFile(pacedBucketsFile); err == nil {
		if err := json.Unmarshal(data, &held); err != nil {
			t.Fatal(err)
		}
	}
	times := 2 + len(pacedStalls)
	recs := make([]recordedBuckets, len(pacedKinds)*times)
	var wg sync.WaitGroup
	for i := range recs {
		k := pacedKinds[i/times]
		var stalls map[int]time.Duration
		if j := i%times - 2; j >= 0 {
			stalls = pacedStalls[j]
		}
		prefix := fmt.Sprintf("%s%d:", redistest.Prefix(t), i)
		wg.Go(func() {
			buckets, info := drivePaced(t, prefix, k, stalls)
			if info == nil {
				return
			}
			r := recordedBuckets{Kind: k.kind, Algorithm: info.Algorithm, Stalled: stalls != nil, Current: k.settings[0]}
			r.First, r.Counts = fromBuckets(buckets[0])
			for twin := 1; twin <= 2; twin++ {
				tw := twinBuckets{Settings: k.settings[twin]}
				tw.First, tw.Counts = fromBuckets(buckets[twin])
				r.Twins = append(r.Twins, tw)
			}
			recs[i] = r
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	recs = append(held, recs...)
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

package feed

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/live"
)

// A lock's 10 s wait summary rides in the frames only while it had
// contention: a delta carries it when it changed, leaves it out when it
// did not, and sends a zero summary once the contention left the window.
func TestDeltaWaitSummaries(t *testing.T) {
	var d deltaState
	snap := func(at int64, waits map[string]inspect.WaitStats) *live.Snapshot {
		sn := &live.Snapshot{At: at, Stats: map[string]inspect.Summary{}}
		for _, name := range []string{"busy", "calm", "idle"} {
			sn.Locks = append(sn.Locks, inspect.LockInfo{Name: name, PTTL: -1})
		}
		for name, w := range waits {
			w.WindowS = 10
			sn.Stats[name] = inspect.Summary{Wait: &inspect.WaitWindows{TenSeconds: w}}
		}
		return sn
	}
	contended := inspect.WaitStats{Acquired: 9, Contended: 6, P50MS: 300, P99MS: 3000, MaxMS: 2400}
	// calm was acquired, never after a wait: no summary to carry.
	calm := inspect.WaitStats{Acquired: 4}
	full := buildStatsFrame(snap(1000, map[string]inspect.WaitStats{"busy": contended, "calm": calm}))
	if len(full.Waits) != 1 || full.Waits["busy"] != (LockWait{Acquired: 9, Contended: 6, P50MS: 300, P99MS: 3000, MaxMS: 2400}) {
		t.Fatalf("full frame waits %+v, want busy's summary alone", full.Waits)
	}
	b, err := json.Marshal(full.statsCore)
	if err != nil {
		t.Fatal(err)
	}
	var decoded struct {
		Waits map[string]map[string]int64 `json:"waits"`
	}
	if err := json.Unmarshal(b, &decoded); err != nil || decoded.Waits["busy"]["p99_ms"] != 3000 || decoded.Waits["busy"]["contended"] != 6 {
		t.Fatalf("encoded waits %s (%v)", b, err)
	}
	if b, _ := d.next(full.statsCore); b != nil {
		t.Fatal("first frame must be sent whole")
	}
	// Unchanged: left out.
	b, _ = d.next(buildStatsFrame(snap(1200, map[string]inspect.WaitStats{"busy": contended, "calm": calm})).statsCore)
	if f := decodeDelta(t, b); len(f.Waits) != 0 {
		t.Errorf("unchanged waits sent again: %+v", f.Waits)
	}
	// busy waited once more, idle became contended.
	more := contended
	more.Acquired, more.Contended, more.MaxMS = 10, 7, 4100
	idle := inspect.WaitStats{Acquired: 1, Contended: 1, P50MS: 3, P99MS: 3, MaxMS: 2}
	b, _ = d.next(buildStatsFrame(snap(1400, map[string]inspect.WaitStats{"busy": more, "calm": calm, "idle": idle})).statsCore)
	f := decodeDelta(t, b)
	if len(f.Waits) != 2 || f.Waits["busy"].Contended != 7 || f.Waits["busy"].MaxMS != 4100 || f.Waits["idle"].Contended != 1 {
		t.Errorf("waits %+v, want busy's new summary and idle's", f.Waits)
	}
	// busy's contention left the window: a zero summary says so, once.
	b, _ = d.next(buildStatsFrame(snap(1600, map[string]inspect.WaitStats{"calm": calm, "idle": idle})).statsCore)
	if f = decodeDelta(t, b); len(f.Waits) != 1 || f.Waits["busy"] != (LockWait{}) {
		t.Errorf("waits %+v, want busy zeroed alone", f.Waits)
	}
	if _, ok := f.Waits["busy"]; !ok {
		t.Error("busy's zero summary missing")
	}
	b, _ = d.next(buildStatsFrame(snap(1800, map[string]inspect.WaitStats{"calm": calm, "idle": idle})).statsCore)
	if f = decodeDelta(t, b); len(f.Waits) != 0 {
		t.Errorf("waits %+v, want none after the zero was sent", f.Waits)
	}
}

// A frame without contended locks, and a delta where no summary changed,
// leave "waits" out (every viewer gets five frames a second).
func TestWaitsLeftOutWhenEmpty(t *testing.T) {
	var d deltaState
	sn := &live.Snapshot{At: 1000, Locks: []inspect.LockInfo{{Name: "l", PTTL: -1}}}
	b, err := json.Marshal(buildStatsFrame(sn).statsCore)
	if err != nil || strings.Contains(string(b), `"waits"`) {
		t.Fatalf("full frame %s (%v)", b, err)
	}
	d.next(buildStatsFrame(sn).statsCore)
	sn.At = 1200
	if b, _ = d.next(buildStatsFrame(sn).statsCore); strings.Contains(string(b), `"waits"`) {
		t.Errorf("delta %s", b)
	}
}

// A lock's longest current waiter goes out once as waiting_since, not
// every tick as its wait grows; a delta sends 0 once nobody waits. The
// locks of a cycle are in every frame.
func TestFramesWaitingSince(t *testing.T) {
	waiting := func(arrived ...int64) *live.Snapshot {
		l := inspect.LockInfo{Name: "q", Holders: []inspect.Holder{{ID: "tok"}}}
		for _, a := range arrived {
			l.Waiters = append(l.Waiters, inspect.Waiter{ArrivedMS: a, RemainingMS: 5000})
		}
		l.WaitersTotal = int64(len(arrived))
		return &live.Snapshot{Locks: []inspect.LockInfo{l}, Deadlocks: []live.SeenDeadlock{{Deadlock: inspect.Deadlock{
			Cycle: []inspect.DeadlockStep{{Lock: "y"}, {Lock: "x"}}}}}}
	}
	var d deltaState
	f := buildStatsFrame(waiting(7000, 6000))
	if f.WaitingSince["q"] != 6000 || !slices.Equal(f.Deadlocked, []string{"x", "y"}) {
		t.Fatalf("waiting_since %v, deadlocked %v: want the oldest arrival and the cycle's locks", f.WaitingSince, f.Deadlocked)
	}
	if b, _ := d.next(f.statsCore); b != nil {
		t.Fatal("the first frame is whole")
	}
	b, _ := d.next(buildStatsFrame(waiting(7000, 6000)).statsCore)
	if dl := decodeDelta(t, b); len(dl.WaitingSince) != 0 || len(dl.Deadlocked) != 2 {
		t.Errorf("same waiters: delta %s; want no waiting_since, the cycle again", b)
	}
	b, _ = d.next(buildStatsFrame(waiting()).statsCore)
	if dl := decodeDelta(t, b); dl.WaitingSince["q"] != 0 || len(dl.WaitingSince) != 1 {
		t.Errorf("waiters gone: delta %s; want waiting_since q: 0", b)
	}
}

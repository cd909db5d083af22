package history_test

import (
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/lockwarden/lockwarden/web/history"
)

// On a Cluster every object's history lands in its own slot across the
// masters; a restarted History reads it all back.
func TestClusterWriteRead(t *testing.T) {
	c := redistest.StartCluster(t, nil)
	cc := redistest.NewClusterClient(t, c)
	clean(t, cc)
	start := base(t, cc)
	var lims, locks []string
	for i := range 30 {
		lims = append(lims, name(t, "lim")+string(rune('a'+i)))
		locks = append(locks, name(t, "lock")+string(rune('a'+i)))
	}
	samples := limiterSamples(start, 70, lims...)
	for i := range samples {
		for _, lk := range locks {
			samples[i].Locks = append(samples[i].Locks, history.LockSample{Name: lk, PTTL: time.Minute,
				Holders: []history.Holder{holder(i / 20)}})
		}
	}
	h1 := open(t, cc, nil)
	feed(t, []*history.History{h1}, samples...)
	if err := h1.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	h2 := open(t, cc, nil)
	for _, lim := range lims {
		got := readLimiter(t, h2, lim, history.SpanHour)
		checkPoints(t, got, 10*time.Second, 360, want(start, 70, 10*time.Second))
	}
	for _, lk := range locks {
		got := readLock(t, h2, lk, history.SpanHour)
		if len(got.Holds) != 4 || !got.Holds[0].To.IsZero() || got.Holds[1].Ended != history.EndHandedOff {
			t.Fatalf("%s: holds %+v, want one running and three handed off", lk, got.Holds)
		}
	}
}

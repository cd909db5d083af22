package inspect

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// A release that arrives after its hold ended is heard on the lock's late
// channel and read from its stats ring, naming both holders.
func TestLateReleaseHeardAndSampled(t *testing.T) {
	ctx := context.Background()
	p, _ := lockTestClient(t)
	name := redistest.Prefix(t) + "late"
	s, err := p.SubscribeEvents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	first := p.NewLock(name, &store.LockOptions{NoWatchdog: true, Lease: 100 * time.Millisecond})
	if err := first.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	<-first.Lost()
	second := p.NewLock(name, nil)
	// Lost closes by the client's clock, counted from the send: Redis's
	// own expiry may run a moment after.
	redistest.Eventually(t, "the second holder gets it", func() bool { return second.TryLock(ctx) == nil })
	defer second.Unlock(ctx)
	if err := first.Unlock(ctx); !errors.Is(err, store.ErrNotHeld) {
		t.Fatalf("late Unlock = %v, want ErrNotHeld", err)
	}

	var ev Event
	for deadline := time.Now().Add(redistest.Patience); ev.Type != EventLate; {
		ev = eventsWait(t, s, time.Until(deadline))
	}
	want := LateRelease{Lock: name, Holder: first.HolderID(), Op: LateReleaseOp, Next: second.HolderID()}
	if ev.Name != name || ev.Late == nil || ev.Late.Holder != want.Holder || ev.Late.Next != want.Next ||
		ev.Late.Op != want.Op || ev.Late.At.IsZero() || ev.Late.NextSince.IsZero() {
		t.Fatalf("late event %+v (%+v), want %+v", ev, ev.Late, want)
	}
	smp, err := p.Inspector.Sample(ctx, []string{name}, nil)
	if err != nil {
		t.Fatal(err)
	}
	late := smp.Stats[name].Late
	if len(late) != 1 || late[0].Holder != want.Holder || late[0].Next != want.Next || !late[0].At.Equal(ev.Late.At) {
		t.Fatalf("sampled late records %+v, want the one heard %+v", late, *ev.Late)
	}
}

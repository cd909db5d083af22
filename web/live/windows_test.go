package live

import (
	"testing"

	"github.com/lockwarden/lockwarden/store/inspect"
)

func TestWindowsRing(t *testing.T) {
	h := newWindows(10)
	push := func(at, acquired int64) {
		h.PushTick(at, []inspect.LimiterInfo{{Name: "a"}}, map[string]inspect.Summary{"a": {Window: inspect.Counts{Acquired: acquired}}})
	}
	for i := range int64(25) {
		push(i*200, i)
	}
	// A tick that sees the same bucket again replaces, not appends.
	push(24*200, 99)
	r := h.Recent("a", 100)
	if len(r) != 10 {
		t.Fatalf("kept %d points, want 10", len(r))
	}
	if r[0].At != 24*200 || r[0].Window.Acquired != 99 || r[9].At != 15*200 {
		t.Errorf("recent = first %+v last %+v", r[0], r[9])
	}
	// One point per second, oldest first.
	sp := h.Spark("a", 3, 1000)
	if len(sp) != 2 || sp[0].Acquired != 19 || sp[1].Acquired != 99 {
		t.Errorf("spark = %+v, want windows at 3.8 s and 4.8 s", sp)
	}
	h.retain(map[string]bool{"b": true})
	if h.Recent("a", 5) != nil {
		t.Error("retain kept a limiter that is gone")
	}
}

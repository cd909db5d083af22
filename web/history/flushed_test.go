package history_test

import (
	"testing"

	"github.com/lockwarden/lockwarden/web/history"
)

// Flushed is the flush every read ends at: none before the first write,
// then the newest sample the writer flushed, on a reader as on the writer.
func TestFlushed(t *testing.T) {
	rdb, start := fresh(t)
	w, r := open(t, rdb, &history.Options{ID: "w"}), open(t, rdb, &history.Options{ID: "r"})
	if got, err := r.Flushed(t.Context()); err != nil || !got.IsZero() {
		t.Fatalf("before any flush: %v %v, want zero", got, err)
	}
	samples := limiterSamples(start, 25, name(t, "lim"))
	feed(t, []*history.History{w}, samples...)
	feed(t, []*history.History{r}, samples...)
	last := samples[len(samples)-1].At
	if !w.Stats().Writer || r.Stats().Writer {
		t.Fatalf("writer %+v, reader %+v: want w writing", w.Stats(), r.Stats())
	}
	for _, h := range []*history.History{w, r} {
		if got, err := h.Flushed(t.Context()); err != nil || !got.Equal(last) {
			t.Errorf("Flushed = %v %v, want the last sample's time %v", got, err, last)
		}
	}
	if ws := w.Stats().LastFlush; !ws.Equal(last) {
		t.Errorf("the writer's LastFlush %v, want %v as Flushed", ws, last)
	}
}

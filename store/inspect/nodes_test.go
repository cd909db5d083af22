package inspect

import (
	"testing"

	"github.com/lockwarden/lockwarden/store/redistest"
)

// On one node there is no other node to read instead: a Redis that does
// not answer fails the sample, as before.
func TestSampleSingleNodeDownFails(t *testing.T) {
	srv := redistest.StartT(t)
	in := New(redistest.NewClient(t, srv), nil)
	name := redistest.Prefix(t) + "lock"
	if _, err := in.Sample(t.Context(), []string{name}, nil); err != nil {
		t.Fatalf("Sample with Redis up: %v", err)
	}
	srv.Pause()
	if s, err := in.Sample(t.Context(), []string{name}, nil); err == nil {
		t.Fatalf("Sample with Redis down = %+v, nil error", s)
	}
}

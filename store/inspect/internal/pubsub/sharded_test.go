package pubsub

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestPairDedup(t *testing.T) {
	d := NewDedup(4096)
	t0 := time.Unix(1000, 0)
	m := &redis.Message{Channel: "c", Payload: "0"}
	steps := []struct {
		sharded bool
		at      time.Duration
		dup     bool
	}{
		{false, 0, false},                   // classic copy
		{true, 10 * time.Millisecond, true}, // its sharded twin
		{true, 20 * time.Millisecond, false},
		{true, 30 * time.Millisecond, false}, // two sharded: both real
		{false, 40 * time.Millisecond, true},
		{false, 50 * time.Millisecond, true},
		{false, 60 * time.Millisecond, false},
		{true, 60*time.Millisecond + DedupWindow + time.Millisecond, false}, // twin too late
	}
	for i, st := range steps {
		if got := d.Duplicate(m, st.sharded, t0.Add(st.at)); got != st.dup {
			t.Fatalf("step %d: duplicate = %v, want %v", i, got, st.dup)
		}
	}
}

package inspect

import (
	"fmt"
	"slices"
	"testing"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// The light reads' keys, over both turns, are those the full read reads
// besides the hash, but for the fair timeouts and store's waiter entries
// (shown only beside their queues):
// EXISTS finding none means the full read would show no side state.
func TestLightSideKeysAreTheFullReadsKeys(t *testing.T) {
	name := "orders:42"
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialed: nothing is executed
	t.Cleanup(func() { rdb.Close() })
	pipe := rdb.Pipeline()
	queueRLockSides(t.Context(), pipe, name)
	pipe.HGetAll(t.Context(), wire.StatsKey(name))
	var full []string
	for _, c := range pipe.Cmds() {
		if k := fmt.Sprint(c.Args()[1]); !slices.Contains(full, k) {
			full = append(full, k)
		}
	}
	light := []string{wire.FairLockTimeoutKey(name), wire.LockEntriesKey(name)}
	for _, turn := range []lightTurn{lightToken, lightHeld} {
		keys, ok := lightSideKeys(name, turn)
		if !ok {
			t.Fatalf("turn %d: no light read of %q", turn, name)
		}
		for _, k := range keys {
			if !slices.Contains(light, k) {
				light = append(light, k)
			}
		}
	}
	slices.Sort(full)
	slices.Sort(light)
	if !slices.Equal(full, light) {
		t.Errorf("light reads and the timeouts cover %v, the full read reads %v", light, full)
	}
	for _, odd := range []string{"a}b", "{}x"} { // Redisson's names of their side keys hash elsewhere
		if _, ok := lightSideKeys(odd, lightToken); ok {
			t.Errorf("%q: side keys in other slots, yet read lightly", odd)
		}
	}
	if _, ok := lightSideKeys("{tag}rest", lightHeld); !ok {
		t.Error(`"{tag}rest" keeps its side keys in its slot, yet no light read`)
	}
}

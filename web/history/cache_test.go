package history

import (
	"strconv"
	"testing"
	"time"
)

// The cache holds what was asked for lately, and no more than
// cacheMax entries: names come from URLs.
func TestCacheBounded(t *testing.T) {
	var c Cache
	t.Cleanup(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.sweep != nil {
			c.sweep.Stop()
		}
	})
	key := func(i int) cacheKey { return cacheKey{entryLimiter, strconv.Itoa(i), "1h"} }
	now := time.Now().UnixMilli()
	const over = 10
	for i := range cacheMax + over {
		c.store(key(i), &cacheEntry{through: 2, val: i, used: now - int64(cacheMax+over-i)})
	}
	if n := len(c.entries); n != cacheMax {
		t.Fatalf("%d entries, want the cap %d", n, cacheMax)
	}
	for i := range cacheMax + over {
		if _, ok := c.lookup(key(i), 2, 0); ok != (i >= over) {
			t.Errorf("entry %d kept %v: want the %d asked for least recently gone", i, ok, over)
		}
	}
	// A read at an older flush time does not replace a newer one.
	c.store(key(over), &cacheEntry{through: 1, val: -1, used: now})
	if v, ok := c.lookup(key(over), 2, 0); !ok || v != over {
		t.Errorf("entry at flush 2 after a store at flush 1: %v %v", v, ok)
	}
	// All but one go idle.
	c.mu.Lock()
	for k, e := range c.entries {
		if k != key(over) {
			e.used = now - cacheIdle.Milliseconds()
		}
	}
	c.mu.Unlock()
	c.dropIdle()
	if _, ok := c.lookup(key(over), 2, 0); !ok || len(c.entries) != 1 {
		t.Errorf("%d entries after dropping the idle ones, want the one asked for", len(c.entries))
	}
}

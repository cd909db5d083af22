package web

import (
	"bytes"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/lockwarden/lockwarden/web/history"
)

// Viewers asking the same what-if at once cost one fit and one replay of
// the flushed demand; another proposal one more replay; a proposal the
// limiter refuses nothing.
func TestWhatIfOncePerFlushAndProposal(t *testing.T) {
	e := newHistoryEnv(t)
	name := e.prefix + "rl"
	e.trafficOnBucket(name)
	e.waitTotals(name, 5, 3)
	path := "/api/limiters/" + esc(name) + "/what-if"
	ask := func(body string) [][]byte {
		out := make([][]byte, 20)
		var wg sync.WaitGroup
		for i := range out {
			wg.Go(func() {
				st, _, b := e.do("POST", path, strings.NewReader(body), map[string]string{"Content-Type": "application/json"})
				if st != http.StatusOK {
					t.Errorf("what-if: %d %s", st, b)
				}
				out[i] = b
			})
		}
		wg.Wait()
		return out
	}
	// A flush between two requests makes two keys: ask again until one
	// flush time served all of them.
	flush := func() int64 {
		_, through, err := e.srv.hcache.Limiter(t.Context(), name, history.SpanHour)
		if err != nil {
			t.Fatal(err)
		}
		return through
	}
	for try := 1; ; try++ {
		before, through := e.srv.hcache.WhatIfStats(), flush()
		answers := ask(`{"rate":2,"interval_ms":1000}`)
		ask(`{"rate":3,"interval_ms":1000}`)
		after := e.srv.hcache.WhatIfStats()
		if flush() != through && try < 3 {
			continue
		}
		if after.Fits-before.Fits > 1 || after.Replays-before.Replays != 2 || after.MaxRunning != 1 {
			t.Fatalf("40 what-ifs of 2 proposals: %+v then %+v; want at most one fit, two replays, one at a time", before, after)
		}
		for _, b := range answers[1:] {
			if !bytes.Equal(b, answers[0]) {
				t.Fatalf("two viewers got %s and %s", answers[0], b)
			}
		}
		break
	}
	before := e.srv.hcache.WhatIfStats()
	e.sendJSON("POST", path, `{"rate":2,"interval_ms":0.5}`, 200, nil) // a token bucket takes fractions
	e.sendJSON("POST", path, `{"rate":0,"interval_ms":10}`, 400, nil)
	if after := e.srv.hcache.WhatIfStats(); after.Replays-before.Replays > 1 {
		t.Errorf("a refused proposal was replayed: %+v then %+v", before, after)
	}
}

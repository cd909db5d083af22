package web

import (
	"context"
	"net/http"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/web/history"
)

// historyReads counts the reads of history and audit keys on the
// console's client, per key: the rings, hold keys, index and meta key of
// web/history, and the audit stream whose records are a chart's markers.
type historyReads struct {
	audit string
	mu    sync.Mutex
	keys  map[string]int
	// requests counts every command sent for an HTTP request (its context
	// or one derived from it), history or not.
	requests atomic.Int64
}

// historyRing matches web/history's per-object keys (web/history/doc.go).
var historyRing = regexp.MustCompile(`^lw:\{[^}]*\}:h(10s|1m|holds|open|wait):`)

// readCommands are the commands the history's and the audit's readers send.
var readCommands = map[string]bool{"get": true, "getrange": true, "hget": true, "hgetall": true, "lrange": true,
	"zrange": true, "zrevrange": true, "xrevrange": true, "xrange": true}

func (h *historyReads) count(cmds ...redis.Cmder) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range cmds {
		args := c.Args()
		if !readCommands[c.Name()] || len(args) < 2 {
			continue
		}
		key, _ := args[1].(string)
		if key == h.audit || key == history.IndexKey || key == history.MetaKey || historyRing.MatchString(key) {
			h.keys[key]++
		}
	}
}

// reset returns the counts so far and starts again from zero.
func (h *historyReads) reset() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.keys
	h.keys = map[string]int{}
	return out
}

func (h *historyReads) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *historyReads) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.count(cmd)
		if ctx.Value(http.ServerContextKey) != nil {
			h.requests.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (h *historyReads) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.count(cmds...)
		if ctx.Value(http.ServerContextKey) != nil {
			h.requests.Add(int64(len(cmds)))
		}
		return next(ctx, cmds)
	}
}

// Viewers cost the history nothing: 20 requests at once for the overview
// (its 24 h thumbnails, the most contended locks) and a limiter's chart
// (its 1 h steps, the audit trail's change markers) read each history key
// and the audit stream once per step the writer flushed meanwhile, not
// once per request.
func TestHistoryReadsOncePerStep(t *testing.T) {
	reads := &historyReads{keys: map[string]int{}}
	// On the console's own client, before the console starts using it.
	e := newHistoryEnv(t, func(c *Config) {
		reads.audit = c.AuditKey
		c.Inspector.Redis().AddHook(reads)
	})
	name := e.prefix + "rl"
	e.trafficOnBucket(name)
	e.waitTotals(name, 5, 3)
	h := e.srv.hist.History()

	// A flush now: the requests below are the first at its time.
	last := h.Stats().LastFlush
	eventually(t, 10*time.Second, "a flush of a newer sample", func() bool {
		flushHistory(t, e.srv)
		return h.Stats().LastFlush.After(last)
	})
	flushes := h.Stats().Flushes
	reads.reset()
	sent := reads.requests.Load()
	paths := []string{"/", "/limiters/" + esc(name)}
	var wg sync.WaitGroup
	codes := make([]int, 20)
	for i := range codes {
		wg.Go(func() {
			resp, err := e.http.Get(e.srv.URL() + paths[i%2])
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			codes[i] = resp.StatusCode
		})
	}
	wg.Wait()
	got := reads.reset()
	steps := int(h.Stats().Flushes-flushes) + 1
	for i, c := range codes {
		if c != http.StatusOK {
			t.Errorf("GET %s: %d", paths[i%2], c)
		}
	}
	others := 0
	for key, n := range got {
		if key == history.MetaKey {
			continue
		}
		others++
		if n > steps {
			t.Errorf("%s read %d times by 20 requests over %d step(s); want at most once a step", key, n, steps)
		}
	}
	// Each refresh of a ring reads the flush time with it, and the cache
	// asks for it at most twice a second when a step is due.
	if n := got[history.MetaKey]; n > 2*steps*(others+1) {
		t.Errorf("the meta key read %d times by 20 requests over %d step(s)", n, steps)
	}
	for _, key := range []string{reads.audit, history.CoarseKey(name), history.FineKey(name)} {
		if got[key] == 0 {
			t.Errorf("%s not read after a flush: the test counts the wrong client or keys, or the cache missed the flush (%v)", key, got)
		}
	}
	t.Logf("reads by 20 requests over %d step(s): %v; %d commands sent for the requests in all",
		steps, got, reads.requests.Load()-sent)

	// An edit made on this console is on the chart at once, a flush or
	// not: the audit trail is read again, once.
	e.sendJSON("PUT", "/api/limiters/"+esc(name), `{"rate":7,"interval_ms":1000,"reason":"test"}`, 200, nil)
	flushes = h.Stats().Flushes
	reads.reset()
	for range 5 {
		var lh apiLimiterHistory
		e.getJSON("/api/limiters/"+esc(name)+"/history", 200, &lh)
		if len(lh.Changes) != 1 || lh.Changes[0].Action != "modify" {
			t.Fatalf("changes right after the edit: %+v, want the modify", lh.Changes)
		}
	}
	steps = int(h.Stats().Flushes-flushes) + 1
	if n := reads.reset()[reads.audit]; n < 1 || n > steps {
		t.Errorf("the audit trail read %d times by 5 requests after an edit over %d step(s), want once a step", n, steps)
	}
}

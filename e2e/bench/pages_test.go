package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"time"
)

// Case 9: page loads with 10,000 locks and 1,000 token buckets. Pages and
// list APIs are served from the sampler's snapshot, so a load costs the
// console's own CPU and bytes, not a SCAN.

// pageLoad is one path's request times and response size.
type pageLoad struct {
	path  string
	p50   float64 // ms
	p99   float64 // ms
	bytes int
}

// pagePaths are the pages case 9 times.
var pagePaths = []string{"/locks", "/api/locks", "/limiters", "/api/limiters", "/", "/wall"}

// pageObjects puts locks Redisson-layout locks and limiters token buckets
// under a fresh prefix; cleanup deletes them.
func pageObjects(ctx context.Context, e *env, locks, limiters int) (string, func(), error) {
	admin := e.client(16)
	prefix := e.prefix("pages")
	cleanup := func() {
		_ = deleteByPrefix(context.WithoutCancel(ctx), admin.Client, prefix)
		admin.Close()
	}
	for i := 0; i < locks; i += 1000 { // bounded: locks/1000 pipelines
		p := admin.Pipeline()
		for j := i; j < min(locks, i+1000); j++ {
			name := fmt.Sprintf("%slock:%05d", prefix, j)
			p.HSet(ctx, name, fmt.Sprintf("0f8a2c1e-7b3d-4e9f-a6c5-123456789abc:%d", j%64), 1)
			p.PExpire(ctx, name, time.Hour+time.Duration(j)*time.Millisecond)
		}
		if _, err := p.Exec(ctx); err != nil {
			return prefix, cleanup, err
		}
	}
	_, err := makeBuckets(ctx, admin.store(), prefix, limiters)
	return prefix, cleanup, err
}

// pageLoads starts a console over prefix, waits until its snapshot lists
// every lock, then requests each path n times, one after another.
func pageLoads(ctx context.Context, e *env, prefix string, locks, n int) ([]pageLoad, error) {
	c, err := startConsole(ctx, e.addr, consoleOpts{match: prefix + "*"})
	if err != nil {
		return nil, err
	}
	defer c.close()
	hc := &http.Client{Timeout: 30 * time.Second}
	get := func(path string) ([]byte, int, error) {
		req, _ := http.NewRequestWithContext(ctx, "GET", c.srv.URL()+path, nil)
		resp, err := hc.Do(req)
		if err != nil {
			return nil, 0, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return b, resp.StatusCode, err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		b, st, err := get("/api/locks?limit=1")
		var p struct{ Total int }
		if err == nil && st == 200 && json.Unmarshal(b, &p) == nil && p.Total == locks {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the console did not list %d locks within a minute (last: %d %.200s %v)", locks, st, b, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var out []pageLoad
	for _, path := range pagePaths {
		var ms []float64
		size := 0
		for range n {
			start := time.Now()
			b, st, err := get(path)
			if err != nil || st != 200 {
				return nil, fmt.Errorf("GET %s: %d %v", path, st, err)
			}
			ms = append(ms, float64(time.Since(start).Microseconds())/1000)
			size = len(b)
		}
		sort.Float64s(ms)
		out = append(out, pageLoad{path: path, p50: ms[len(ms)/2], p99: ms[min(len(ms)-1, len(ms)*99/100)], bytes: size})
	}
	return out, nil
}

// pagesReport writes case 9 through w.
func pagesReport(ctx context.Context, e *env, w func(string, ...any), target func(string, bool, string)) error {
	const locks, limiters, n = 10_000, 1_000, 50
	w("\n## 9. Page loads: 10,000 locks and 1,000 token buckets\n\n")
	w("One console over the objects (its MATCH selects them); once its snapshot lists every lock, each path is requested %d times one after another over loopback. "+
		"Times are from sending the request to the last byte read, so they include the transfer on loopback; bytes are the response body. Lists are one page (100 rows) of the snapshot; no request reads Redis.\n\n", n)
	prefix, cleanup, err := pageObjects(ctx, e, locks, limiters)
	defer cleanup()
	if err != nil {
		return err
	}
	res, err := pageLoads(ctx, e, prefix, locks, n)
	if err != nil {
		return err
	}
	w("| path | p50 (ms) | p99 (ms) | KB |\n|---|---|---|---|\n")
	for _, r := range res {
		w("| `%s` | %.1f | %.1f | %.1f |\n", r.path, r.p50, r.p99, float64(r.bytes)/1024)
		if r.path == "/locks" {
			target("9. GET /locks at 10,000 locks ≤ 100 ms (p99)", r.p99 <= 100, fmt.Sprintf("%.1f ms", r.p99))
			target("9. GET /locks at 10,000 locks ≤ 300 KB", r.bytes <= 300*1024, fmt.Sprintf("%.1f KB", float64(r.bytes)/1024))
		}
	}
	return nil
}

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// Case 7: an unlock published by an application, to the frame at a viewer.
// Each PUBLISH carries its own send time (unix ns) as the message, which the
// console relays unchanged in the unlock frame's "message".

type eventResult struct {
	rate          float64 // events published per second, achieved
	p50, p99, max float64 // ms
	lost          int     // published but not received
}

// eventLatency publishes perSec unlock messages a second for d, spread over
// 100 lock names, with one viewer connected.
func eventLatency(ctx context.Context, e *env, perSec int, d time.Duration) (eventResult, error) {
	var res eventResult
	prefix := e.prefix("c7")
	c, err := startConsole(ctx, e.addr, consoleOpts{match: prefix + "*", discoverEvery: time.Hour})
	if err != nil {
		return res, err
	}
	defer c.close()
	var mu sync.Mutex
	var lat []time.Duration
	var probes int
	fc, err := newFrameCounter(ctx, c.ws, func(msg []byte, at time.Time) {
		var ev struct{ Type, Message string }
		if json.Unmarshal(msg, &ev) != nil || ev.Type != "unlock" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if ev.Message == "probe" {
			probes++
			return
		}
		if sent, err := strconv.ParseInt(ev.Message, 10, 64); err == nil {
			lat = append(lat, at.Sub(time.Unix(0, sent)))
		}
	})
	if err != nil {
		return res, err
	}
	defer fc.close()
	pub := e.client(1)
	defer pub.Close()
	channel := func(i int) string { return fmt.Sprintf("redisson_lock__channel:{%slock:%d}", prefix, i%100) }
	// The console subscribes in the background after Open: wait until a
	// message gets through.
	for i := 0; ; i++ {
		mu.Lock()
		got := probes
		mu.Unlock()
		if got > 0 {
			break
		}
		if i == 500 {
			return res, fmt.Errorf("no unlock frame within 5 s of publishing")
		}
		if err := pub.Publish(ctx, channel(0), "probe").Err(); err != nil {
			return res, err
		}
		time.Sleep(10 * time.Millisecond)
	}

	total := int(float64(perSec) * d.Seconds())
	every := time.Second / time.Duration(perSec)
	start := time.Now()
	for i := 0; i < total; i++ {
		// Sleep to the schedule; a late sleep is caught up by publishing
		// back to back, so the mean rate holds.
		if w := time.Until(start.Add(time.Duration(i) * every)); w > 0 {
			time.Sleep(w)
		}
		if err := pub.Publish(ctx, channel(i), strconv.FormatInt(time.Now().UnixNano(), 10)).Err(); err != nil {
			return res, err
		}
	}
	res.rate = float64(total) / time.Since(start).Seconds()
	// Stragglers: at most a second.
	for i := 0; i < 100; i++ {
		mu.Lock()
		n := len(lat)
		mu.Unlock()
		if n >= total {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	res.lost = total - len(lat)
	res.p50, res.p99, res.max = percentileMS(lat, 50), percentileMS(lat, 99), percentileMS(lat, 100)
	if len(lat) == 0 {
		return res, fmt.Errorf("none of %d events arrived", total)
	}
	return res, nil
}

package web

import (
	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

// After a change made through the console (modify, force-unlock, reset,
// release-all) the lists must agree with what the admin just did, yet they
// are served from the sampler's snapshot, and an idle object is read only
// every few seconds. So a change marks its objects to be read on the next
// tick and waits, bounded, for a snapshot taken after that read: the
// redirect that follows then shows the new state.

// freshWait bounds how long a change waits for the sampler: two ticks of
// the default 200 ms, with room for a slow pipeline.
const freshWait = time.Second

// touched collects names to read on the next tick, from any goroutine.
type touched struct {
	mu    sync.Mutex
	names []string
}

func (t *touched) add(names ...string) {
	t.mu.Lock()
	t.names = append(t.names, names...)
	t.mu.Unlock()
}

func (t *touched) drain() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := t.names
	t.names = nil
	return out
}

// changed marks names to be read on the next tick. For a browser form it
// then waits until a snapshot taken after that tick is published, or
// freshWait passes, or the request ends: the redirect renders a list. An
// API caller gets the object's new state in its reply, so it does not wait.
// It never fails the change it follows.
func (s *Server) changed(c echo.Context, names ...string) {
	sm := s.sampler
	if sm == nil || len(names) == 0 {
		return
	}
	sm.touch.add(names...)
	if wantsJSON(c) {
		return
	}
	ctx := c.Request().Context()
	// The tick running now may have drained before the names arrived; the
	// one after it has read them.
	want := sm.published.Load() + 2
	deadline := time.NewTimer(freshWait)
	defer deadline.Stop()
	poll := time.NewTicker(20 * time.Millisecond)
	defer poll.Stop()
	for sm.published.Load() < want {
		select {
		case <-ctx.Done():
			return
		case <-deadline.C:
			return
		case <-poll.C:
		}
	}
}

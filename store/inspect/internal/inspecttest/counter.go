// Package inspecttest helps the tests of package inspect and its rooms:
// Counter counts what a go-redis client sends (commands by name, each
// command as a line of its name and arguments, and round trips), and the
// fixtures write objects in their owners' layouts with raw commands.
package inspecttest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// Counter is a redis.Hook that counts; add it with AddHook.
type Counter struct {
	mu    sync.Mutex
	n     map[string]int
	log   Log
	trips int // round trips: single calls and pipelines
}

// Log is commands sent, one "name arg arg ..." line each.
type Log []string

// Count is how many commands named cmd were sent (with key among their
// arguments, if key != "").
func (l Log) Count(cmd, key string) int {
	n := 0
	for _, s := range l {
		args := strings.Split(s, " ")
		if args[0] == cmd && (key == "" || slices.Contains(args[1:], key)) {
			n++
		}
	}
	return n
}

// RoundTrips returns the round trips sent since the last call.
func (h *Counter) RoundTrips() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.trips
	h.trips = 0
	return n
}

func (h *Counter) trip() {
	h.mu.Lock()
	h.trips++
	h.mu.Unlock()
}

func (h *Counter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *Counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.trip()
		h.add(cmd)
		return next(ctx, cmd)
	}
}

func (h *Counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.trip()
		for _, c := range cmds {
			h.add(c)
		}
		return next(ctx, cmds)
	}
}

func (h *Counter) add(cmd redis.Cmder) {
	line := cmd.Name()
	for _, a := range cmd.Args()[1:] {
		line += " " + fmt.Sprint(a)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == nil {
		h.n = map[string]int{}
	}
	h.n[cmd.Name()]++
	h.log = append(h.log, line)
}

// TakeLog returns the commands logged since the last TakeLog and forgets
// them.
func (h *Counter) TakeLog() Log {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.log
	h.log = nil
	return s
}

// Take returns how many commands named name were sent since the last Take
// of that name.
func (h *Counter) Take(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	v := h.n[name]
	delete(h.n, name)
	return v
}

// Private starts a redis-server of the test's own (for tests whose subject
// is server-wide: the whole keyspace, the registry, notification settings)
// and returns a writer client and a console client whose commands h
// counts.
func Private(t testing.TB) (writer, console *redis.Client, h *Counter) {
	srv := redistest.StartT(t)
	writer = redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { writer.Close() })
	console = redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { console.Close() })
	h = &Counter{}
	console.AddHook(h)
	return writer, console, h
}

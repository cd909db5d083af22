package web

import "sync"

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

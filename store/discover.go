package store

import (
	"context"
	"time"
)

// STUB (owned by the console-read work): signatures are the contract.

// Discovered is what one discovery pass found.
type Discovered struct {
	Locks    []LockInfo    // sorted by name
	Limiters []LimiterInfo // sorted by name
}

// Discover SCANs for keys matching match ("" means "*") and classifies them.
func (c *Client) Discover(ctx context.Context, match string) (*Discovered, error) {
	return &Discovered{}, nil
}

// Sample is one sampler tick: fresh state and stats of known objects, read
// in one pipelined round trip per Redis node.
type Sample struct {
	At       time.Time          // Redis TIME at the sample
	Locks    []LockInfo         // requested locks that still exist
	Limiters []LimiterInfo      // requested limiters that still exist
	Stats    map[string]Summary // by object name, for every requested name
}

// Sample reads state and stats of the named locks and limiters.
func (c *Client) Sample(ctx context.Context, locks, limiters []string) (*Sample, error) {
	return &Sample{Stats: map[string]Summary{}}, nil
}

// EventStream delivers lock events until closed.
type EventStream struct{ ch chan Event }

// Events is the stream's channel; it is closed by Close.
func (s *EventStream) Events() <-chan Event { return s.ch }

// Close stops the subscription.
func (s *EventStream) Close() error { return nil }

// SubscribeEvents pattern-subscribes to unlock channels.
func (c *Client) SubscribeEvents(ctx context.Context) (*EventStream, error) {
	return &EventStream{ch: make(chan Event)}, nil
}

// Package faulttest holds the fault suite: every lock kind and
// limiter of package store runs against a real redis-server through a TCP
// proxy that delays and cuts replies, while Redis is restarted, its script
// cache flushed and its clients paused, and a checker proves that no lock
// was ever granted to two holders at once.
//
// This file is the proxy. It is written here rather than taken from
// toxiproxy: the suite needs one fault toxiproxy has no toxic for (close a
// connection after writing part of a reply, chosen per reply chunk at
// random from a seed the test prints), and a few dozen lines of io.Copy
// cost less than a module and its HTTP control API.
package faulttest

import (
	"io"
	"math/rand"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Fault says what the proxy does to the replies it forwards.
type Fault struct {
	// DelayOnce delays the next reply chunk by Delay, once.
	DelayOnce bool
	// DelayProb delays each reply chunk by Delay with this probability.
	DelayProb float64
	// ResetProb cuts the connection after writing half of a reply chunk,
	// with this probability per chunk.
	ResetProb float64
	// Delay is longer than the clients' ReadTimeout, so a delayed reply
	// trips it and go-redis retries the command on another connection.
	Delay time.Duration
}

// Proxy forwards 127.0.0.1 connections to a Redis address, applying the
// current Fault to the server-to-client direction.
type Proxy struct {
	ln       net.Listener
	upstream string

	mu    sync.Mutex
	fault Fault
	rng   *rand.Rand
	conns map[net.Conn]struct{}

	onceArmed atomic.Bool
	wg        sync.WaitGroup
	closed    atomic.Bool

	Delayed, Reset atomic.Int64 // faults applied, for the matrix
}

// NewProxy listens on a free loopback port and forwards to upstream; seed
// drives every random fault decision.
func NewProxy(upstream string, seed int64) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, upstream: upstream, rng: rand.New(rand.NewSource(seed)), conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address clients dial.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetFault replaces the fault; a DelayOnce is armed anew.
func (p *Proxy) SetFault(f Fault) {
	p.mu.Lock()
	p.fault = f
	p.mu.Unlock()
	p.onceArmed.Store(f.DelayOnce)
}

// Close stops accepting, cuts every connection and waits for the copiers.
func (p *Proxy) Close() {
	p.closed.Store(true)
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.upstream)
		if err != nil { // Redis is down (a restart): the client sees a reset
			c.Close()
			continue
		}
		if !p.track(c, u) {
			return
		}
		p.wg.Add(2)
		go func() { defer p.wg.Done(); io.Copy(u, c); u.Close(); c.Close() }()
		go func() { defer p.wg.Done(); p.replies(c, u); u.Close(); c.Close(); p.untrack(c, u) }()
	}
}

func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *Proxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		delete(p.conns, c)
	}
}

// decide picks the fault for one reply chunk under the lock (one RNG).
func (p *Proxy) decide() (delay time.Duration, cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.fault
	if f.DelayOnce && p.onceArmed.CompareAndSwap(true, false) {
		return f.Delay, false
	}
	if f.DelayProb > 0 && p.rng.Float64() < f.DelayProb {
		return f.Delay, false
	}
	if f.ResetProb > 0 && p.rng.Float64() < f.ResetProb {
		return 0, true
	}
	return 0, false
}

// replies copies server-to-client chunk by chunk, each chunk one decision:
// a chunk is usually one reply, or the replies of one pipeline.
func (p *Proxy) replies(client, server net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 {
			delay, cut := p.decide()
			if delay > 0 {
				p.Delayed.Add(1)
				time.Sleep(delay)
			}
			if cut {
				p.Reset.Add(1)
				client.Write(buf[:n/2]) // part of a reply, then the cut
				return
			}
			if _, werr := client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

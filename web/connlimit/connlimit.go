// Package connlimit shares the console's open connections among the
// addresses that open them, so that no one address, and no crowd of
// anonymous ones, can keep the admin out.
//
// Three rules, each enforced where net/http lets it be seen:
//   - a total cap (Options.Max), like netutil.LimitListener's, but a new
//     connection at the cap closes the longest-idle connection (one that
//     has not carried an authenticated request first) instead of waiting
//     behind it: an idle keep-alive costs its client only a new dial,
//     while a blocked Accept leaves every newcomer, the admin included,
//     in the kernel's backlog until an idle timeout ends;
//   - a share per source (Options.PerSource; an IPv4 address or an IPv6
//     /64, auth.Source): past it a source's new connection replaces that
//     source's own longest-idle one, or is closed at once;
//   - a short idle time before authentication (Options.PreAuthIdle): a
//     connection idle that long without having carried a request that
//     Authenticated marked is closed, while the server's own IdleTimeout
//     still applies to the rest.
//
// Hand-written for a measured reason: with netutil.LimitListener alone,
// 1,030 idle connections from one address (one anonymous GET /healthz
// each) kept another address's request unanswered past a 10 s client
// timeout (web's TestAttackIdleConnectionsFromOneAddress), since the cap
// blocks Accept and knows neither sources nor idleness; http.Server's own
// knobs (IdleTimeout, ReadHeaderTimeout) are one value for every
// connection. The Limiter plugs into them: Listener wraps the listener,
// ConnState and ConnContext are http.Server's hooks of those names.
package connlimit

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockwarden/lockwarden/web/auth"
)

// Defaults of Options.
const (
	DefaultMax         = 1024
	DefaultPreAuthIdle = 5 * time.Second
	// defaultShareDiv: one source's default share is Max/defaultShareDiv.
	defaultShareDiv = 16
)

// Options adjust a Limiter; zero fields are the defaults.
type Options struct {
	// Max caps open connections (default DefaultMax).
	Max int
	// PerSource caps one source's open connections (default Max/16).
	PerSource int
	// PreAuthIdle closes a connection idle this long (or open this long
	// without a request) before it carried an authenticated request
	// (default DefaultPreAuthIdle).
	PreAuthIdle time.Duration
}

// Counts are running totals since start.
type Counts struct {
	Open     int    // connections open now
	Refused  uint64 // closed at accept: their source was at its share with nothing idle to replace
	Evicted  uint64 // idle connections closed to make room for a new one
	IdleShut uint64 // closed after PreAuthIdle without authentication
}

// Limiter tracks the connections of one listener.
type Limiter struct {
	max, perSource int
	preAuthIdle    time.Duration

	mu       sync.Mutex
	freed    *sync.Cond // a connection closed (under mu)
	open     map[*conn]struct{}
	bySource map[string]int
	closed   bool // the listener closed: Accept no longer waits

	refused, evicted, idleShut atomic.Uint64
}

// New returns a Limiter with opts (nil for the defaults).
func New(opts *Options) *Limiter {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Max <= 0 {
		o.Max = DefaultMax
	}
	if o.PerSource <= 0 {
		o.PerSource = max(o.Max/defaultShareDiv, 1)
	}
	if o.PreAuthIdle <= 0 {
		o.PreAuthIdle = DefaultPreAuthIdle
	}
	l := &Limiter{max: o.Max, perSource: o.PerSource, preAuthIdle: o.PreAuthIdle,
		open: map[*conn]struct{}{}, bySource: map[string]int{}}
	l.freed = sync.NewCond(&l.mu)
	return l
}

// Counts returns the running totals.
func (l *Limiter) Counts() Counts {
	l.mu.Lock()
	n := len(l.open)
	l.mu.Unlock()
	return Counts{Open: n, Refused: l.refused.Load(), Evicted: l.evicted.Load(), IdleShut: l.idleShut.Load()}
}

// conn is one accepted connection. Its fields below the embedded Conn
// are guarded by the Limiter's mu.
type conn struct {
	net.Conn
	l      *Limiter
	source string
	once   sync.Once

	released bool // its slot is given back (closed, or chosen for eviction)
	state    http.ConnState
	since    time.Time // of the current state
	authed   bool      // carried an authenticated request
	timer    *time.Timer
}

// Close gives the connection's slot back and closes it; again is a no-op.
func (c *conn) Close() error {
	err := net.ErrClosed
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.release(c)
		c.l.mu.Unlock()
		err = c.Conn.Close()
	})
	return err
}

// CloseWrite keeps http.Server's graceful close (it half-closes a TCP
// connection before closing it) working through the wrapper.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// release gives c's slot back (under mu), once.
func (l *Limiter) release(c *conn) {
	if c.released {
		return
	}
	c.released = true
	if c.timer != nil {
		c.timer.Stop()
	}
	delete(l.open, c)
	if l.bySource[c.source]--; l.bySource[c.source] <= 0 {
		delete(l.bySource, c.source)
	}
	l.freed.Signal()
}

// idle: c carries no request now (new and not yet read from, or between
// requests), so closing it loses nothing its client cannot redo.
func (c *conn) idle() bool {
	return !c.released && (c.state == http.StateNew || c.state == http.StateIdle)
}

// Listener wraps ln so that its connections obey l.
func (l *Limiter) Listener(ln net.Listener) net.Listener { return &listener{Listener: ln, l: l} }

type listener struct {
	net.Listener
	l *Limiter
}

func (ln *listener) Accept() (net.Conn, error) {
	for {
		nc, err := ln.Listener.Accept()
		if err != nil {
			return nil, err
		}
		c, err := ln.l.admit(nc)
		if err != nil {
			_ = nc.Close()
			return nil, err
		}
		if c != nil {
			return c, nil
		}
	}
}

func (ln *listener) Close() error {
	ln.l.mu.Lock()
	ln.l.closed = true
	ln.l.freed.Broadcast()
	ln.l.mu.Unlock()
	return ln.Listener.Close()
}

// errListenerClosed ends an Accept that waited for a slot.
var errListenerClosed = errors.New("connlimit: listener closed")

// admit gives nc a slot: nil when its source is at its share with nothing
// idle to replace (nc is then closed). At the total cap it closes the
// longest-idle connection, or waits for one to close when none is idle.
func (l *Limiter) admit(nc net.Conn) (*conn, error) {
	src := sourceOf(nc.RemoteAddr())
	var victims []*conn
	defer func() {
		for _, v := range victims {
			_ = v.Conn.Close()
		}
	}()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.bySource[src] >= l.perSource {
		v := l.longestIdle(func(c *conn) bool { return c.source == src })
		if v == nil {
			l.refused.Add(1)
			_ = nc.Close()
			return nil, nil
		}
		victims = append(victims, l.evict(v))
	}
	for len(l.open) >= l.max {
		if v := l.longestIdle(nil); v != nil {
			victims = append(victims, l.evict(v))
			continue
		}
		if l.closed {
			return nil, errListenerClosed
		}
		l.freed.Wait()
	}
	c := &conn{Conn: nc, l: l, source: src, state: http.StateNew, since: time.Now()}
	l.open[c] = struct{}{}
	l.bySource[src]++
	l.armIdle(c)
	return c, nil
}

// evict takes v's slot (under mu) and returns it for closing outside mu.
func (l *Limiter) evict(v *conn) *conn {
	l.evicted.Add(1)
	l.release(v)
	return v
}

// longestIdle is the idle connection (matching keep, if not nil) idle the
// longest, those not yet authenticated first; nil when none is idle. A
// scan: it runs only at a cap, over at most Max connections.
func (l *Limiter) longestIdle(keep func(*conn) bool) *conn {
	var best *conn
	for c := range l.open {
		if !c.idle() || (keep != nil && !keep(c)) {
			continue
		}
		if best == nil || (best.authed && !c.authed) || (best.authed == c.authed && c.since.Before(best.since)) {
			best = c
		}
	}
	return best
}

// armIdle (under mu) closes c after PreAuthIdle unless it is by then
// active, authenticated or closed.
func (l *Limiter) armIdle(c *conn) {
	if c.authed {
		return
	}
	if c.timer != nil {
		c.timer.Stop()
	}
	since := c.since
	c.timer = time.AfterFunc(l.preAuthIdle, func() {
		l.mu.Lock()
		shut := c.idle() && !c.authed && c.since.Equal(since)
		if shut {
			l.release(c)
		}
		l.mu.Unlock()
		if shut {
			l.idleShut.Add(1)
			_ = c.Conn.Close()
		}
	})
}

// ConnState is http.Server's ConnState hook: it tells l which connections
// are idle.
func (l *Limiter) ConnState(nc net.Conn, st http.ConnState) {
	c, ok := nc.(*conn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.released {
		return
	}
	c.state, c.since = st, time.Now()
	switch st {
	case http.StateNew, http.StateIdle:
		l.armIdle(c)
		// An Accept waiting at the cap may close this one now.
		l.freed.Signal()
	case http.StateActive, http.StateHijacked:
		if c.timer != nil {
			c.timer.Stop()
		}
	}
}

type connKey struct{}

// ConnContext is http.Server's ConnContext hook: it lets Authenticated
// find a request's connection.
func (l *Limiter) ConnContext(ctx context.Context, nc net.Conn) context.Context {
	if c, ok := nc.(*conn); ok {
		return context.WithValue(ctx, connKey{}, c)
	}
	return ctx
}

// Authenticated marks the connection of the request whose context is ctx
// as having carried an authenticated request: from then on only the
// server's IdleTimeout closes it when idle, and at a cap it is closed only
// once no unauthenticated idle connection is left.
func Authenticated(ctx context.Context) {
	c, ok := ctx.Value(connKey{}).(*conn)
	if !ok {
		return
	}
	c.l.mu.Lock()
	c.authed = true
	if c.timer != nil {
		c.timer.Stop()
	}
	c.l.mu.Unlock()
}

// sourceOf is the source a connection counts against: auth.Source of its
// peer's address, as the guessing limits count.
func sourceOf(a net.Addr) string {
	if tcp, ok := a.(*net.TCPAddr); ok {
		return auth.Source(tcp.IP.String())
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return auth.Source(host)
}

package feed

import (
	"sync"
	"sync/atomic"

	"github.com/gorilla/websocket"
)

// sendBuffer bounds the frames queued for one client: 64 frames is about
// 13 s of stats at 5 frames per second, far more than a healthy viewer
// ever lags, so a full buffer means the viewer is gone or too slow.
const sendBuffer = 64

// outFrame is one text frame on its way to viewers. pm is the same frame
// framed once for every viewer (gorilla's PreparedMessage), so a broadcast
// to 1,000 viewers builds the frame's header and copies its bytes once,
// not 1,000 times; data stays for tests and for a writer without pm.
type outFrame struct {
	data []byte
	pm   *websocket.PreparedMessage
}

func prepare(data []byte) outFrame {
	pm, err := websocket.NewPreparedMessage(websocket.TextMessage, data)
	if err != nil { // not for an uncompressed text frame; write it plainly then
		pm = nil
	}
	return outFrame{data: data, pm: pm}
}

// wsClient is one websocket viewer as the hub sees it.
type wsClient struct {
	conn *websocket.Conn
	// send is closed by the hub only, after it set closeCode.
	send chan outFrame
	// primed says the viewer got a stats frame with the rarely-changing
	// parts (kinds, first_seen, limiter_info, holders); until then it is
	// sent the full form of each stats frame. Owned by the hub goroutine.
	primed bool
	// closeCode tells the writer why send was closed. Written by the hub
	// goroutine before close(send), read by the writer after it sees the
	// close, so the channel close orders the two.
	closeCode int
	// readerDone is closed when the connection's reader has returned.
	readerDone chan struct{}
}

type hubOpKind int

const (
	opRegister hubOpKind = iota
	opUnregister
	opBroadcast
	opSticky // a broadcast that is also replayed to every later client
	opStats  // a stats frame, full for viewers not yet primed
)

// Sticky frames: the newest of each kind is replayed to a client that
// connects later, in this order, so a new viewer learns Redis's state and
// the firing alerts before any stats frame.
const (
	stickyStatus = iota
	stickyAlerts
	stickyKinds
)

type hubOp struct {
	kind   hubOpKind
	client *wsClient
	frame  outFrame
	sticky int // which sticky frame an opSticky replaces
	// full builds the full form of a stats frame whose frame leaves out
	// the unchanged parts; nil when frame is full already. Called at most
	// once, and only when a viewer needs it.
	full func() outFrame
}

// hub owns the client set. One goroutine (run) mutates it, so broadcasting
// is a loop over a map with no locks, and it never blocks on a client.
// Registrations and frames travel through one queue, so a client that
// registers after a status change was queued gets that status, not an
// older one.
type hub struct {
	ops  chan hubOp
	quit chan struct{} // closed once shutdown was requested
	done chan struct{} // closed when run has returned
	stop sync.Once
	// started is set by start; until then nothing is queued, so a Server
	// used only through Handler (never opened) cannot block on a full
	// queue nobody drains.
	started atomic.Bool

	// Counts the hub's goroutine keeps for Feed.Counts.
	clients, dropped, broadcasts atomic.Int64
}

func newHub() *hub {
	return &hub{
		ops:  make(chan hubOp, 64),
		quit: make(chan struct{}),
		done: make(chan struct{}),
	}
}

// start runs the hub in a new goroutine; wg tracks it.
func (h *hub) start(wg *sync.WaitGroup) {
	h.started.Store(true)
	wg.Add(1)
	go func() { defer wg.Done(); h.run() }()
}

func (h *hub) run() {
	defer close(h.done)
	clients := make(map[*wsClient]struct{})
	var sticky [stickyKinds]*outFrame
	end := func(c *wsClient, code int) {
		delete(clients, c)
		c.closeCode = code
		close(c.send)
		h.clients.Store(int64(len(clients)))
	}
	for {
		select {
		case op := <-h.ops:
			switch op.kind {
			case opRegister:
				clients[op.client] = struct{}{}
				h.clients.Store(int64(len(clients)))
				for _, f := range sticky {
					if f != nil {
						op.client.send <- *f // a new client's buffer has room
					}
				}
			case opUnregister:
				if _, ok := clients[op.client]; ok {
					end(op.client, websocket.CloseNormalClosure)
				}
			case opSticky, opBroadcast, opStats:
				if op.kind == opSticky {
					sticky[op.sticky] = &op.frame
				}
				var full *outFrame
				for c := range clients {
					f := op.frame
					if op.kind == opStats && !c.primed && op.full != nil {
						if full == nil {
							ff := op.full()
							full = &ff
						}
						f = *full
					}
					select {
					case c.send <- f:
						if op.kind == opStats {
							c.primed = true
						}
					default:
						end(c, websocket.CloseTryAgainLater)
						h.dropped.Add(1)
						// The writer may be stuck in a write to a peer that
						// stopped reading; closing the socket frees it now
						// instead of at its write deadline.
						if c.conn != nil {
							_ = c.conn.Close()
						}
					}
				}
				h.broadcasts.Add(1)
			}
		case <-h.quit:
			for c := range clients {
				end(c, websocket.CloseGoingAway)
			}
			return
		}
	}
}

// register adds c; false when the hub is shutting down. A registration
// queued just before shutdown may be accepted and never served: the
// writer also watches done (see Feed.writer).
func (h *hub) register(c *wsClient) bool {
	if !h.started.Load() {
		return false
	}
	select {
	case <-h.quit:
		return false
	default:
	}
	select {
	case h.ops <- hubOp{kind: opRegister, client: c}:
		return true
	case <-h.done:
		return false
	}
}

// unregister removes c if it is still registered (its send gets closed).
func (h *hub) unregister(c *wsClient) { h.send(hubOp{kind: opUnregister, client: c}, nil) }

// broadcast queues frame for every client. It waits only while the queue
// is full, never on a client. The frame is framed here, on the caller's
// goroutine, once for all clients.
func (h *hub) broadcast(frame []byte) { h.send(hubOp{kind: opBroadcast}, frame) }

// broadcastStatus is publishSticky of a status frame.
func (h *hub) broadcastStatus(frame []byte) { h.publishSticky(stickyStatus, frame) }

// publishSticky broadcasts frame and keeps it, as the newest of kind, for
// clients that connect later.
func (h *hub) publishSticky(kind int, frame []byte) {
	h.send(hubOp{kind: opSticky, sticky: kind}, frame)
}

// broadcastStats queues a stats frame. When frame leaves out the parts
// that did not change since the previous one, full returns the complete
// frame, which goes to viewers that never got those parts.
func (h *hub) broadcastStats(frame []byte, full func() []byte) {
	op := hubOp{kind: opStats}
	if full != nil {
		op.full = func() outFrame { return prepare(full()) }
	}
	h.send(op, frame)
}

func (h *hub) send(op hubOp, frame []byte) {
	if !h.started.Load() {
		return
	}
	if frame != nil {
		op.frame = prepare(frame)
	}
	select {
	case h.ops <- op:
	case <-h.done:
	}
}

// shutdown closes every client with 1001 and stops the hub. Calling it
// again, or on a hub never started, does nothing.
func (h *hub) shutdown() {
	if !h.started.Load() {
		return
	}
	h.stop.Do(func() { close(h.quit) })
	<-h.done
}

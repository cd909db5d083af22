// Package feed is what the console's viewers receive live: each snapshot
// becomes a stats frame (a delta for viewers that have the previous one),
// events and the firing alerts become their own frames, and one hub hands
// the same bytes to every websocket, whose one reader and one writer it
// starts. The hub owns the viewer set in one goroutine; a viewer that
// falls behind is dropped, never waited for.
//
// It imports store/inspect, web/live, web/events and web/alert, whose
// snapshots, events and alerts it turns into frames.
package feed

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/lockwarden/lockwarden/web/alert"
	"github.com/lockwarden/lockwarden/web/events"
	"github.com/lockwarden/lockwarden/web/live"
)

// DefaultMaxClients: each viewer costs two goroutines and a 64-frame
// buffer; a console with more viewers than this is being abused. Slots
// admits viewers (per address, admins apart) before Connect.
const DefaultMaxClients = 500

// Feed turns the console's snapshots, events and alerts into frames for
// every viewer.
type Feed struct {
	hub      *hub
	log      *slog.Logger
	upgrader websocket.Upgrader

	// Owned by live's goroutine (Observe).
	delta   deltaState // the numbers as last broadcast
	redisUp *bool      // as last broadcast

	wg       *sync.WaitGroup // Start's: the hub and every connection's reader and writer
	wsMu     sync.Mutex      // orders wg.Add against the Close that precedes wg.Wait
	wsClosed bool            // under wsMu: no new websocket goroutines
}

// Config is what a Feed needs.
type Config struct {
	// CheckOrigin admits a websocket handshake (a browser's, from another
	// site, must be refused); nil admits every one.
	CheckOrigin func(r *http.Request) bool
	Logger      *slog.Logger
}

// New builds a Feed. Nothing is sent until Start.
func New(cfg Config) *Feed {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	f := &Feed{hub: newHub(), log: cfg.Logger}
	f.upgrader = websocket.Upgrader{
		ReadBufferSize:   1024,
		WriteBufferSize:  8192,
		HandshakeTimeout: 5 * time.Second,
		CheckOrigin:      cfg.CheckOrigin,
	}
	if f.upgrader.CheckOrigin == nil {
		f.upgrader.CheckOrigin = func(*http.Request) bool { return true }
	}
	return f
}

// Start runs the hub in a new goroutine; wg tracks it and every
// connection's goroutines, so waiting for wg after Close waits for them.
func (f *Feed) Start(wg *sync.WaitGroup) {
	f.wg = wg
	f.hub.start(wg)
}

// Observe sends the viewers a snapshot live just published: Redis's state
// when it changed, then (Redis up) the stats frame. The status frame goes
// out after the snapshot that agrees with it, so a viewer that reacts to
// it (reloads a page) finds the same state.
func (f *Feed) Observe(sn *live.Snapshot) {
	f.setRedis(sn.RedisUp)
	if sn.RedisUp {
		f.broadcastStats(sn)
	}
}

// setRedis broadcasts a status frame when Redis reachability changes; the
// hub replays the latest one to every new viewer.
func (f *Feed) setRedis(up bool) {
	if f.redisUp != nil && *f.redisUp == up {
		return
	}
	f.redisUp = &up
	state := "down"
	if up {
		state = "up"
	}
	frame, _ := json.Marshal(statusFrame{Type: "status", Redis: state, At: time.Now().UnixMilli()})
	f.hub.broadcastStatus(frame)
}

// Logged sends one entry of the event log to every viewer.
func (f *Feed) Logged(e events.Entry) {
	frame, err := json.Marshal(e)
	if err != nil {
		f.log.Error("encoding event frame", "err", err)
		return
	}
	f.hub.broadcast(frame)
}

// alertsFrame is the websocket "alerts" frame: every firing alert, in the
// order the pages list them. It is sent when the set changes (an alert
// fires or resolves) and to each viewer on connect; a message that only
// ages (a hold time growing) is no change.
type alertsFrame struct {
	Type   string        `json:"type"`
	Alerts []alert.Alert `json:"alerts"`
}

// AlertsChanged sends the viewers the new firing set.
func (f *Feed) AlertsChanged(_ []alert.Change, firing []alert.Alert) {
	frame, err := json.Marshal(alertsFrame{Type: "alerts", Alerts: firing})
	if err != nil {
		f.log.Error("encoding alerts frame", "err", err)
		return
	}
	f.hub.publishSticky(stickyAlerts, frame)
}

// Counts are the feed's numbers as the metrics read them.
type Counts struct {
	Clients    int64 // viewers registered with the hub
	Dropped    int64 // viewers dropped for falling behind
	Broadcasts int64 // frames handed to the hub for every viewer
}

// Counts reads them.
func (f *Feed) Counts() Counts {
	return Counts{Clients: f.hub.clients.Load(), Dropped: f.hub.dropped.Load(), Broadcasts: f.hub.broadcasts.Load()}
}

// Close sends every viewer close code 1001 (going away) and stops the hub;
// no connection is admitted after it.
func (f *Feed) Close() {
	f.wsMu.Lock()
	f.wsClosed = true
	f.wsMu.Unlock()
	f.hub.shutdown()
}

package web

import (
	"encoding/json"
	"log/slog"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/alert"
	"github.com/lockwarden/lockwarden/web/events"
	"github.com/lockwarden/lockwarden/web/live"
)

// consoleObserver sends the viewers each snapshot: Redis's state, then the
// stats frame.
type consoleObserver struct {
	s       *Server
	delta   deltaState // the numbers as last broadcast
	redisUp *bool      // as last broadcast
}

func (o *consoleObserver) Observe(sn *live.Snapshot) {
	// The status frame goes out after the snapshot that agrees with it, so
	// a viewer that reacts to it (reloads a page) finds the same state.
	o.setRedis(sn.RedisUp)
	if sn.RedisUp {
		o.broadcastStats(sn)
	}
}

// setRedis broadcasts a status frame when Redis reachability changes; the
// hub replays the latest one to every new viewer.
func (o *consoleObserver) setRedis(up bool) {
	if o.redisUp != nil && *o.redisUp == up {
		return
	}
	o.redisUp = &up
	state := "down"
	if up {
		state = "up"
	}
	frame, _ := json.Marshal(statusFrame{Type: "status", Redis: state, At: time.Now().UnixMilli()})
	o.s.hub.broadcastStatus(frame)
}

// hubEvents sends each event to every viewer.
type hubEvents struct {
	hub *hub
	log *slog.Logger
}

func (h hubEvents) Event(e events.Event) {
	frame, err := json.Marshal(e)
	if err != nil {
		h.log.Error("encoding event frame", "err", err)
		return
	}
	h.hub.broadcast(frame)
}

// consoleEvents tells viewers and the event log of the locks admin broke.
type consoleEvents struct{ log *events.Log }

func (e consoleEvents) ForceUnlocked(name, holder string, at time.Time) {
	e.log.Publish(events.Event{Type: inspect.EventForceUnlock, Name: name, Holder: holder, At: at})
}

// alertFrames sends the viewers the firing set when it changes.
type alertFrames struct{ s *Server }

func (a alertFrames) AlertsChanged([]alert.Change) { a.s.publishAlerts() }

package web

import (
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/events"
)

// brokenLocks puts the locks admin broke in the event log (and so in
// front of every viewer).
type brokenLocks struct{ log *events.Log }

func (b brokenLocks) ForceUnlocked(name, holder string, at time.Time) {
	b.log.Publish(events.Event{Type: inspect.EventForceUnlock, Name: name, Holder: holder, At: at})
}

// Package clients reads the client registry: a holder field starts with the
// UUID of the store.Client (or Redisson instance) that took it, and
// lockwarden's store clients register that UUID with their application,
// host and pid (store/registry.go, the hash wire.ClientsKey). The console
// reads the registry once per sampler tick at most and joins it with the
// holders it sees; Redisson clients do not register, so their holders stay
// "unregistered".
package clients

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/internal/wire"
)

// Info is one registered client as the registry shows it.
type Info struct {
	ID      string `json:"id"`
	App     string `json:"app"`
	Host    string `json:"host"`
	PID     int    `json:"pid"`
	Version string `json:"version"`
	// Started and Heartbeat are the client's start (its own clock) and
	// its last beat (Redis time); BeatMS its beat period.
	Started   time.Time `json:"-"`
	Heartbeat time.Time `json:"-"`
	BeatMS    int64     `json:"-"`
	// HeartbeatAgeMS is Redis time at the read minus the last beat.
	HeartbeatAgeMS int64 `json:"heartbeat_age_ms"`
	// ReplicaAcks is the client's store.Options.ReplicaAcks: -1 when its
	// lock grants are not confirmed by replicas, 0 when every replica of
	// the master confirms them, n for n replicas; nil when the client does
	// not say (an older store).
	ReplicaAcks *int `json:"replica_acks,omitempty"`
}

// Acked says whether the client's lock grants wait for replicas; nil
// when it does not say.
func (ci Info) Acked() *bool {
	if ci.ReplicaAcks == nil {
		return nil
	}
	on := *ci.ReplicaAcks >= 0
	return &on
}

// Gone reports whether the client missed wire.ClientGoneBeats beats.
func (ci Info) Gone() bool {
	period := ci.BeatMS
	if period <= 0 {
		period = store.DefaultBeat.Milliseconds()
	}
	return ci.HeartbeatAgeMS > wire.ClientGoneBeats*period
}

// Registry is the client registry at one read.
type Registry struct {
	Clients map[string]Info
	// At is Redis time at the read.
	At time.Time
}

// Lookup returns the registered client of a holder field or waiter id
// ("<uuid>:<owner>"); false for unregistered and foreign ids.
func (r *Registry) Lookup(holder string) (Info, bool) {
	if r == nil {
		return Info{}, false
	}
	ci, ok := r.Clients[IDOf(holder)]
	return ci, ok
}

// IDOf is the client UUID that starts a holder field or waiter id;
// "" when the id is not in that shape (a token lock's token).
func IDOf(holder string) string {
	if !wire.IsHolderField(holder) {
		return ""
	}
	return holder[:36]
}

// MaxFields bounds the registry read: the beat script keeps the
// hash to clients seen in the last hour, so more means something is wrong
// and the console reads nobody rather than a huge hash every second.
const MaxFields = 10000

// Parse turns the records of the registry hash (a tick reads it
// when SampleOptions.Clients asks) into a Registry; records that do not
// parse are skipped.
func Parse(fields map[string]string, now time.Time) *Registry {
	r := &Registry{Clients: make(map[string]Info, len(fields)), At: now}
	for id, v := range fields {
		var rec wire.ClientRecord
		if json.Unmarshal([]byte(v), &rec) != nil || rec.HeartbeatMS <= 0 {
			continue
		}
		r.Clients[id] = Info{ID: id, App: rec.App, Host: rec.Host, PID: rec.PID, Version: rec.Version,
			Started: time.UnixMilli(rec.StartedMS), Heartbeat: time.UnixMilli(rec.HeartbeatMS), BeatMS: rec.BeatMS,
			HeartbeatAgeMS: max(0, now.UnixMilli()-rec.HeartbeatMS), ReplicaAcks: rec.ReplicaAcks}
	}
	return r
}

// Describe says who a holder is in words: "orders-api on host-7
// (pid 4211), owner 77", or "unregistered client <uuid> (Redisson or
// other)", or the id itself when it is not a client's (a token).
func Describe(reg *Registry, holder string) string {
	id := IDOf(holder)
	if id == "" {
		return holder
	}
	owner := OwnerOf(holder)
	ci, ok := reg.Lookup(holder)
	if !ok {
		return fmt.Sprintf("unregistered client %s (Redisson or other), owner %s", id, owner)
	}
	s := fmt.Sprintf("%s on %s (pid %d), owner %s", ci.App, ci.Host, ci.PID, owner)
	if ci.Gone() {
		s += ", client gone"
	}
	return s
}

// OwnerOf is the owner part of a store holder field ("<client id>:<owner>",
// a write hold's suffix left out); "" for a holder of another shape.
func OwnerOf(holder string) string {
	if IDOf(holder) == "" {
		return ""
	}
	return strings.TrimSuffix(holder[37:], wire.RWWriteSuffix)
}

// HolderClient is what the registry says about a holder's client.
type HolderClient struct {
	App            string `json:"app"`
	Host           string `json:"host"`
	PID            int    `json:"pid"`
	Version        string `json:"version"`
	HeartbeatAgeMS int64  `json:"heartbeat_age_ms"`
	// Gone: no heartbeat for three beat periods.
	Gone bool `json:"gone,omitempty"`
	// Acked: the client's grants of this lock were confirmed by replicas
	// before it was told it holds it (store.Options.ReplicaAcks), so a
	// failover keeps them; nil when the client does not say.
	Acked *bool `json:"acked,omitempty"`
}

// Of is the registry's word on the client of a holder field or
// waiter owner; nil when the client is not registered.
func Of(reg *Registry, holder string) *HolderClient {
	ci, ok := reg.Lookup(holder)
	if !ok {
		return nil
	}
	return &HolderClient{App: ci.App, Host: ci.Host, PID: ci.PID, Version: ci.Version,
		HeartbeatAgeMS: ci.HeartbeatAgeMS, Gone: ci.Gone(), Acked: ci.Acked()}
}

package live

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// Redis settings that break a lock's exclusion: read once a minute (one
// pipeline per master, inspect.Settings), judged against what the
// snapshot holds, and named with the exact fix.

// settingsEvery is how often the settings are read again.
const settingsEvery = time.Minute

// Problems a setting can have, named as the alerts are.
const (
	SettingEvictsLocks       = "redis-evicts-locks"
	SettingKeyspaceEventsOff = "redis-keyspace-events-off"
	SettingFencingNotKept    = "redis-fencing-not-persisted"
	SettingAcksNoReplica     = "redis-acks-no-replica"
)

// SettingProblem is one setting of one master that breaks exclusion, or
// the console's view of it, and the fix.
type SettingProblem struct {
	Rule    string `json:"rule"`
	Node    string `json:"node"`
	Setting string `json:"setting"`
	Value   string `json:"value"`
	Says    string `json:"says"`
	Fix     string `json:"fix"`
}

// CheckSettings reads the masters' settings once a minute until ctx ends.
func (sm *Sampler) CheckSettings(ctx context.Context) {
	for {
		rctx, cancel := context.WithTimeout(ctx, nodeProbeEvery)
		st, err := sm.insp.Settings(rctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			sm.log.Warn("reading Redis settings", "err", err)
		} else {
			sm.settings.Store(&st)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(settingsEvery):
		}
	}
}

// settingsNow are the settings as last read; nil before.
func (sm *Sampler) settingsNow() []inspect.NodeSettings {
	if p := sm.settings.Load(); p != nil {
		return *p
	}
	return nil
}

// SettingProblems judges sn's settings against what sn holds.
func (sn *Snapshot) SettingProblems() []SettingProblem {
	if sn == nil {
		return nil
	}
	fenced := false
	for _, l := range sn.Locks {
		fenced = fenced || l.Kind == inspect.KindFencedLock
	}
	// Clients that want more replicas to confirm each grant than a master
	// may have (ReplicaAcks n >= 1; 0 asks for the replicas there are).
	acked := map[string]int{}
	if sn.Registry != nil {
		for _, ci := range sn.Registry.Clients {
			if ci.ReplicaAcks != nil && *ci.ReplicaAcks >= 1 && !ci.Gone() {
				acked[ci.App] = max(acked[ci.App], *ci.ReplicaAcks)
			}
		}
	}
	var out []SettingProblem
	for _, n := range sn.Settings {
		if n.Err == "" {
			if strings.HasPrefix(n.MaxMemoryPolicy, "allkeys-") && n.MaxMemory != "0" {
				out = append(out, SettingProblem{Rule: SettingEvictsLocks, Node: n.Addr, Setting: "maxmemory-policy", Value: n.MaxMemoryPolicy,
					Says: "at maxmemory Redis evicts any key, a held lock's too: its holder works on while another takes it",
					Fix:  "CONFIG SET maxmemory-policy noeviction (or volatile-lru with lock leases short) on " + n.Addr + ", and the same in redis.conf"})
			}
			// Without a memory limit nothing is evicted: expiries are told
			// from releases by the unlock messages and leases alone.
			if f := n.KeyspaceEvents; n.MaxMemory != "0" && !(strings.Contains(f, "E") && (strings.Contains(f, "A") || strings.Contains(f, "x") && strings.Contains(f, "e"))) {
				out = append(out, SettingProblem{Rule: SettingKeyspaceEventsOff, Node: n.Addr, Setting: "notify-keyspace-events", Value: f,
					Says: "with a memory limit and no evicted events the lease detector is degraded: a lock evicted under its holder passes for one that expired",
					Fix:  "CONFIG SET notify-keyspace-events Eghxe on " + n.Addr + " (or serve --keyspace-events on), and the same in redis.conf"})
			}
			if fenced && n.AppendOnly == "no" && n.Save == "" {
				out = append(out, SettingProblem{Rule: SettingFencingNotKept, Node: n.Addr, Setting: "appendonly, save", Value: "no, \"\"",
					Says: "fencing tokens live in a counter that a restart without persistence resets: a new holder gets a token an old one already had",
					Fix:  "CONFIG SET appendonly yes on " + n.Addr + " (and appendonly yes in redis.conf)"})
			}
		}
		var short []string
		for app, want := range acked {
			if n.Replicas >= 0 && n.Replicas < want {
				short = append(short, fmt.Sprintf("%s (%d)", app, want))
			}
		}
		if len(short) > 0 {
			slices.Sort(short)
			out = append(out, SettingProblem{Rule: SettingAcksNoReplica, Node: n.Addr, Setting: "connected replicas", Value: fmt.Sprint(n.Replicas),
				Says: fmt.Sprintf("%s require each grant acknowledged by more replicas than the master has (store.Options.ReplicaAcks): no grant can be confirmed", strings.Join(short, ", ")),
				Fix:  "start a replica of " + n.Addr + " (REPLICAOF " + strings.Replace(n.Addr, ":", " ", 1) + " on it), or set store.Options.ReplicaAcks to 0 (the replicas there are) in those applications"})
		}
	}
	return out
}

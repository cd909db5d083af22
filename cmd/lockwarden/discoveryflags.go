package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/inspect/walk"
	"github.com/lockwarden/lockwarden/web"
)

// discoveryFlags are serve's --keyspace-events, --discovery-budget and
// --discovery-pass: how the console finds objects and what that may cost
// Redis. Kept as given (like alertFlags) and parsed by settings, so an
// empty value means the default.
type discoveryFlags struct {
	KeyspaceEvents string
	Budget         string
	Pass           string
}

func (d *discoveryFlags) register(fs *flag.FlagSet) map[string]string {
	fs.StringVar(&d.KeyspaceEvents, "keyspace-events", "",
		"use keyspace notifications to find new objects within a tick: auto (default: when the server publishes them), on (turn them on with CONFIG SET), off (env LOCKWARDEN_KEYSPACE_EVENTS)")
	fs.StringVar(&d.Budget, "discovery-budget", "",
		fmt.Sprintf("`share` of one Redis core the console may use, in (0, 1] or a percentage: sampling is paid first and the paced reconciliation SCAN gets the rest (default %g) (env LOCKWARDEN_DISCOVERY_BUDGET)", inspect.DefaultDiscoveryBudget))
	fs.StringVar(&d.Pass, "discovery-pass", "",
		fmt.Sprintf("`duration` one reconciliation pass over the keyspace should take, at least 1s (default %v) (env LOCKWARDEN_DISCOVERY_PASS)", inspect.DefaultDiscoveryPass))
	return map[string]string{
		"keyspace-events":  "LOCKWARDEN_KEYSPACE_EVENTS",
		"discovery-budget": "LOCKWARDEN_DISCOVERY_BUDGET",
		"discovery-pass":   "LOCKWARDEN_DISCOVERY_PASS",
	}
}

// discoverySettings are the parsed flags; zero values are web's defaults.
type discoverySettings struct {
	KeyspaceEvents walk.KeyEventsMode
	Budget         float64
	Pass           time.Duration
}

// settings parses the flags, saying which value is wrong.
func (d discoveryFlags) settings() (discoverySettings, error) {
	var out discoverySettings
	mode, err := walk.ParseKeyEventsMode(d.KeyspaceEvents)
	if err != nil {
		return out, fmt.Errorf("--keyspace-events %q: want auto, on or off", d.KeyspaceEvents)
	}
	out.KeyspaceEvents = mode
	if v := strings.TrimSpace(d.Budget); v != "" {
		pct := strings.HasSuffix(v, "%")
		f, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
		if pct {
			f /= 100
		}
		if err != nil || !(f > 0 && f <= 1) {
			return out, fmt.Errorf("--discovery-budget %q: want a share of one core in (0, 1] or a percentage, e.g. 0.02 or 2%%", d.Budget)
		}
		out.Budget = f
	}
	if v := strings.TrimSpace(d.Pass); v != "" {
		p, err := time.ParseDuration(v)
		if err != nil || p < time.Second {
			return out, fmt.Errorf("--discovery-pass %q: want a duration of at least 1s, e.g. 60s", d.Pass)
		}
		out.Pass = p
	}
	return out, nil
}

// apply sets the discovery fields of a web.Config.
func (s discoverySettings) apply(c *web.Config) {
	c.KeyspaceEvents, c.DiscoveryBudget, c.DiscoverInterval = s.KeyspaceEvents, s.Budget, s.Pass
}

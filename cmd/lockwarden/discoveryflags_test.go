package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect/walk"
)

func TestCmdDiscoveryFlags(t *testing.T) {
	env := map[string]string{"LOCKWARDEN_DISCOVERY_PASS": "90s"}
	cfg, err := parseServeFlags([]string{"--keyspace-events", "on", "--discovery-budget", "5%"},
		func(k string) string { return env[k] }, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := cfg.Discovery.settings()
	if err != nil || got != (discoverySettings{KeyspaceEvents: walk.KeyEventsOn, Budget: 0.05, Pass: 90 * time.Second}) {
		t.Fatalf("settings %+v, %v", got, err)
	}
	if got, _ := (discoveryFlags{}).settings(); got != (discoverySettings{KeyspaceEvents: walk.KeyEventsAuto}) {
		t.Errorf("defaults %+v, want auto and web's defaults", got)
	}
	for _, args := range [][]string{
		{"--keyspace-events", "yes"},
		{"--discovery-budget", "0"},
		{"--discovery-budget", "150%"},
		{"--discovery-budget", "lots"},
		{"--discovery-pass", "500ms"},
		{"--discovery-pass", "soon"},
	} {
		var stderr bytes.Buffer
		if _, err := parseServeFlags(args, func(string) string { return "" }, &stderr); err != errUsage {
			t.Errorf("%v: err %v, want errUsage", args, err)
		}
		if !strings.Contains(stderr.String(), args[0]) {
			t.Errorf("%v: stderr %q does not name the flag", args, stderr.String())
		}
	}
}

package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/web"
)

func TestCmdHistoryFlags(t *testing.T) {
	env := map[string]string{"LOCKWARDEN_HISTORY_TOP": "40"}
	cfg, err := parseServeFlags([]string{"--history-retention", "2h,48h"}, func(k string) string { return env[k] }, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := cfg.History.settings()
	if err != nil || got != (historySettings{Fine: 2 * time.Hour, Coarse: 48 * time.Hour, Top: 40}) {
		t.Fatalf("settings %+v, %v", got, err)
	}
	var wc web.Config
	got.apply(&wc)
	if wc.HistoryFine != 2*time.Hour || wc.HistoryCoarse != 48*time.Hour || wc.HistoryTop != 40 {
		t.Errorf("web config %v %v %d", wc.HistoryFine, wc.HistoryCoarse, wc.HistoryTop)
	}
	if got, _ := (historyFlags{Top: "0"}).settings(); got.Top >= 0 {
		t.Errorf("--history-top 0 gives top %d, want web's none (negative)", got.Top)
	}
	if got, _ := (historyFlags{}).settings(); got != (historySettings{}) {
		t.Errorf("defaults %+v, want web's", got)
	}
	demo, err := parseDemoFlags([]string{"--history-top", "5"}, func(string) string { return "" }, &bytes.Buffer{})
	if got, _ := demo.History.settings(); err != nil || got.Top != 5 {
		t.Errorf("demo --history-top 5: %+v, %v", got, err)
	}
	for _, args := range [][]string{
		{"--history-retention", "1h"},
		{"--history-retention", "15s,24h"},
		{"--history-retention", "1h,90s"},
		{"--history-retention", "soon,later"},
		{"--history-top", "-1"},
		{"--history-top", "many"},
	} {
		for name, parse := range map[string]func([]string) error{
			"serve": func(a []string) error {
				_, err := parseServeFlags(a, func(string) string { return "" }, &bytes.Buffer{})
				return err
			},
			"demo": func(a []string) error {
				_, err := parseDemoFlags(a, func(string) string { return "" }, &bytes.Buffer{})
				return err
			},
		} {
			if err := parse(args); err != errUsage {
				t.Errorf("%s %v: err %v, want errUsage", name, args, err)
			}
		}
		var stderr bytes.Buffer
		_, _ = parseServeFlags(args, func(string) string { return "" }, &stderr)
		if !strings.Contains(stderr.String(), args[0]) {
			t.Errorf("%v: stderr %q does not name the flag", args, stderr.String())
		}
	}
}

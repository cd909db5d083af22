package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lockwarden/lockwarden/web"
)

// historyFlags are --history-retention and --history-top: how far back
// the history in Redis goes and for how many objects. Kept as given and
// parsed by settings, so an empty value means web's default.
type historyFlags struct {
	Retention string
	Top       string
}

func (h *historyFlags) register(fs *flag.FlagSet) map[string]string {
	fs.StringVar(&h.Retention, "history-retention", "",
		"`FINE,COARSE`: how long a limiter's 10 s steps and its 1 min steps are kept in Redis, e.g. 1h,24h (the default) (env LOCKWARDEN_HISTORY_RETENTION)")
	fs.StringVar(&h.Top, "history-top", "",
		"`N`: keep the history of the N busiest limiters and the N busiest locks, nothing beyond; 0 keeps none (default 250) (env LOCKWARDEN_HISTORY_TOP)")
	return map[string]string{"history-retention": "LOCKWARDEN_HISTORY_RETENTION", "history-top": "LOCKWARDEN_HISTORY_TOP"}
}

// historySettings are the parsed flags; zero values are web's defaults.
type historySettings struct {
	Fine, Coarse time.Duration
	Top          int // negative: no history
}

// settings parses the flags, saying which value is wrong.
func (h historyFlags) settings() (historySettings, error) {
	var out historySettings
	if v := strings.TrimSpace(h.Retention); v != "" {
		fine, coarse, ok := strings.Cut(v, ",")
		f, ferr := time.ParseDuration(strings.TrimSpace(fine))
		c, cerr := time.ParseDuration(strings.TrimSpace(coarse))
		if !ok || ferr != nil || cerr != nil || f < 10*time.Second || f%(10*time.Second) != 0 ||
			c < time.Minute || c%time.Minute != 0 {
			return out, fmt.Errorf("--history-retention %q: want two durations, FINE,COARSE, the first a multiple of 10s and the second of 1m, e.g. 1h,24h", h.Retention)
		}
		out.Fine, out.Coarse = f, c
	}
	if v := strings.TrimSpace(h.Top); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return out, fmt.Errorf("--history-top %q: want a whole number >= 0", h.Top)
		}
		out.Top = n
		if n == 0 {
			out.Top = -1 // web's "none"
		}
	}
	return out, nil
}

// apply sets the history fields of a web.Config.
func (h historySettings) apply(c *web.Config) {
	c.HistoryFine, c.HistoryCoarse, c.HistoryTop = h.Fine, h.Coarse, h.Top
}

package conv

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Holder and limiter facts: what a convention's value says about who holds
// a lock or how a limiter is set, by these names.
const (
	FactHost     = "host"
	FactPID      = "pid"
	FactSince    = "since" // RFC 3339, UTC
	FactJob      = "job"
	FactQueue    = "queue"
	FactWorker   = "worker"
	FactState    = "state"
	FactLayout   = "layout"
	FactExpires  = "expires" // RFC 3339, UTC
	FactLimit    = "limit"
	FactRunning  = "running"
	FactDomain   = "domain"
	FactClientID = "client"
)

// Describe says a holder's facts in words.
func Describe(f map[string]string) string {
	var parts []string
	if h := f[FactHost]; h != "" {
		s := "host " + h
		if pid := f[FactPID]; pid != "" {
			s += " (pid " + pid + ")"
		}
		parts = append(parts, s)
	}
	for _, k := range []string{FactWorker, FactJob, FactQueue, FactState} {
		if v := f[k]; v != "" {
			parts = append(parts, k+" "+v)
		}
	}
	if len(parts) == 0 {
		keys := make([]string, 0, len(f))
		for k := range f {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			parts = append(parts, k+" "+f[k])
		}
	}
	return strings.Join(parts, ", ")
}

// ResetText says what Reset does to the limiter of kind at name (facts:
// its facts), and whether kind has a reset.
func ResetText(kind, name string, facts map[string]string) (string, bool) {
	c := Of(kind, "")
	if c == nil || c.reset == nil {
		return "", false
	}
	switch kind {
	case Bottleneck:
		return fmt.Sprintf("Refills the reservoir to its refresh amount (%s) now, as bottleneck's own refresh does, and publishes the capacity on %s so the clients' queued jobs run at once. Refused when the limiter has no reservoir refresh.", facts["reservoirRefreshAmount"], facts["channel"]), true
	case LaravelThrottle:
		return fmt.Sprintf("Deletes %s, as Laravel's DurationLimiter clear() does: the next attempt starts a new window.", name), true
	}
	return fmt.Sprintf("Deletes %s, as the library's own reset does: the client it limits is admitted again at once and its next request starts a new window. The limit itself is the application's.", name), true
}

// sortHolders orders holders by id, so listings are stable.
func sortHolders(hs []Holder) {
	sort.Slice(hs, func(i, j int) bool { return hs[i].ID < hs[j].ID })
}

// rfc3339 formats epoch ms for a fact.
func rfc3339(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano) }

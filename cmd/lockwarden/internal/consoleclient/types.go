package consoleclient

import (
	"encoding/json"
	"strings"
	"time"
)

// The API's bodies, as far as the terminal reads them (web/kinds.go,
// web/wait.go, web/deadlocks.go, store/inspect's model). Fields the
// terminal does not show are left out; --json prints the console's own
// bytes, so nothing is lost to a script.

// Identity is a registered client as a holder or waiter carries it.
type Identity struct {
	App            string `json:"app"`
	Host           string `json:"host"`
	PID            int    `json:"pid"`
	Version        string `json:"version"`
	HeartbeatAgeMS int64  `json:"heartbeat_age_ms"`
	Gone           bool   `json:"gone"`
}

// Holder is one owner of a lock.
type Holder struct {
	ID            string    `json:"id"`
	Count         int64     `json:"count"`
	Mode          string    `json:"mode"`
	Client        *Identity `json:"client"`
	HeldMS        int64     `json:"held_ms"`
	HeldSinceSeen bool      `json:"held_since_seen"`
	RenewedAgoMS  int64     `json:"renewed_ago_ms"`
	Who           string    `json:"who"`
}

// Waiter is one place in a lock's queue.
type Waiter struct {
	ID          string    `json:"id"`
	Owner       string    `json:"owner"`
	Position    int       `json:"position"`
	RemainingMS int64     `json:"remaining_ms"`
	WaitingMS   *int64    `json:"waiting_ms"`
	Client      *Identity `json:"client"`
	Who         string    `json:"who"`
}

// WaitStats are a lock's finished waits over a window.
type WaitStats struct {
	WindowS   int   `json:"window_s"`
	Acquired  int64 `json:"acquired"`
	Contended int64 `json:"contended"`
	P50MS     int64 `json:"p50_ms"`
	P99MS     int64 `json:"p99_ms"`
	MaxMS     int64 `json:"max_ms"`
}

// UnlockPlan is what a force-unlock of one holder would do.
type UnlockPlan struct {
	Deletes      []string `json:"deletes"`
	RemovesField string   `json:"removes_field"`
	Channel      string   `json:"channel"`
	Message      string   `json:"message"`
	Summary      string   `json:"summary"`
}

// Stale marks an object shown as last read (its node did not answer).
type Stale struct {
	Node       string `json:"node"`
	LastReadMS int64  `json:"last_read_ms"`
}

// Lock is a row of GET /api/locks, or GET /api/locks/{name} (which adds
// every waiter and the force-unlock plans).
type Lock struct {
	Name         string    `json:"name"`
	Kind         string    `json:"kind"`
	Holders      []Holder  `json:"holders"`
	PTTLMS       int64     `json:"pttl_ms"`
	Mode         string    `json:"mode"`
	Waiters      []Waiter  `json:"waiters"`
	WaitersTotal int64     `json:"waiters_total"`
	Subscribers  *int64    `json:"subscribers"`
	Wait         WaitStats `json:"wait"`
	// LongestWaitMS is how long the longest current waiter has waited (0:
	// nobody waits, or none says since when).
	LongestWaitMS int64                 `json:"longest_wait_ms"`
	ForceUnlock   map[string]UnlockPlan `json:"force_unlock"`
	Stale         *Stale                `json:"stale"`
}

// Window is a limiter's last second; Rejected is nil where Redis keeps no
// record of rejections.
type Window struct {
	Acquired int64  `json:"acquired"`
	Rejected *int64 `json:"rejected"`
	Errors   int64  `json:"errors"`
}

// Limiter is a row of GET /api/limiters or GET /api/limiters/{name}.
type Limiter struct {
	Name             string  `json:"name"`
	Kind             string  `json:"kind"`
	Rate             int64   `json:"rate"`
	IntervalMS       float64 `json:"interval_ms"`
	PerSecond        float64 `json:"per_second"`
	Available        int64   `json:"available"`
	AvailableUnknown bool    `json:"available_unknown"`
	Window           Window  `json:"window"`
	Count            *int64  `json:"count"`
	Limit            *int64  `json:"limit"`
	Stale            *Stale  `json:"stale"`
}

// DeadlockStep is one hold of a wait-for cycle: Holder holds Lock and
// waits for WaitsFor.
type DeadlockStep struct {
	Lock     string    `json:"lock"`
	Holder   string    `json:"holder"`
	WaitsFor string    `json:"waits_for"`
	Client   *Identity `json:"client"`
	Who      string    `json:"who"`
	// Youngest is the hold to break first (the least work lost).
	Youngest bool `json:"youngest"`
}

// Deadlock is one cycle of GET /api/deadlocks.
type Deadlock struct {
	Since time.Time      `json:"since"`
	Cycle []DeadlockStep `json:"cycle"`
}

// Path is the cycle's locks in order, back to the first: "a → b → a".
func (d Deadlock) Path() string {
	var b strings.Builder
	for _, st := range d.Cycle {
		b.WriteString(st.Lock + " → ")
	}
	if len(d.Cycle) > 0 {
		b.WriteString(d.Cycle[0].Lock)
	}
	return b.String()
}

// Alert is a firing alert (GET /api/alerts, the "alerts" frame).
type Alert struct {
	Rule     string    `json:"rule"`
	Name     string    `json:"name"`
	Severity string    `json:"severity"`
	Since    time.Time `json:"since"`
	Message  string    `json:"message"`
}

// Outcome is what a limiter did, or would have done, to its demand.
type Outcome struct {
	Admitted int64 `json:"admitted"`
	Rejected int64 `json:"rejected"`
}

// WhatIf is POST /api/limiters/{name}/what-if: the last hour replayed at
// the proposed settings.
type WhatIf struct {
	SpanS     float64 `json:"span_s"`
	Attempts  int64   `json:"attempts"`
	Actual    Outcome `json:"actual"`
	Predicted Outcome `json:"predicted"`
	// LowerBound: the limiter's rejections are not recorded, so the demand
	// replayed is only what it admitted.
	LowerBound bool `json:"lower_bound"`
}

// Released is one hold a release-all broke, or found gone.
type Released struct {
	Lock     string `json:"lock"`
	Holder   string `json:"holder"`
	Released bool   `json:"released"`
	Error    string `json:"error"`
}

// Why is GET /api/why/{name}: one paragraph that answers why the object
// is as it is, the facts behind it and the ways out.
type Why struct {
	Name    string            `json:"name"`
	Kind    string            `json:"kind"`
	State   string            `json:"state"`
	Answer  string            `json:"answer"`
	Facts   map[string]any    `json:"facts"`
	Actions []json.RawMessage `json:"actions"`
}

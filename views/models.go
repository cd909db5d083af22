// Package views holds the console's server-rendered pages: one view model
// per screen and one templ component that takes it. Views know nothing of
// Redis or the store: handlers copy what a page shows into these plain
// types, which keeps templates testable with literals.
package views

import (
	"net/url"
	"time"
)

// Nav items; Layout.Active selects the highlighted one.
const (
	NavOverview = "overview"
	NavLocks    = "locks"
	NavLimiters = "limiters"
	NavEvents   = "events"
	NavWall     = "wall"
)

// Flash kinds for Layout.FlashKind.
const (
	FlashOK    = "ok"
	FlashError = "error"
)

// Live display parameters shared with static/app.js through data attributes,
// so the script never hard-codes what the server decided.
const (
	// SparkStepMS is the spacing of sparkline points: consecutive
	// non-overlapping 1 s windows, so each point is a distinct second.
	SparkStepMS = 1000
	// SparkPoints caps a sparkline (60 s of history).
	SparkPoints = 60
	// RollingRows caps the rolling summaries table on a limiter page.
	RollingRows = 50
	// EventRows caps event lists.
	EventRows = 200
	// RatioWarn and RatioBad are the reject ratios (rejected over all
	// outcomes in the window) at which the wall turns amber and red.
	RatioWarn = 0.05
	RatioBad  = 0.20
)

// Layout is what every page shares.
type Layout struct {
	Title     string
	Active    string // one of the Nav* constants, "" for none
	CSRFToken string // rendered into every POST form as _csrf
	Flash     string // one-shot message shown on top, e.g. after a redirect
	FlashKind string // FlashOK or FlashError
	RedisDown bool   // the last Redis call failed; pages show a banner
	// Now is the instant the page describes; ages and countdowns are
	// relative to it. Zero means time.Now() at render time.
	Now time.Time
}

// Counts are outcomes over one window.
type Counts struct {
	Acquired int64
	Rejected int64
	Errors   int64
}

// Total is every outcome in the window.
func (c Counts) Total() int64 { return c.Acquired + c.Rejected + c.Errors }

// HolderRow is one owner of a lock: the hash field and its reentry count.
type HolderRow struct {
	ID    string
	Count int64
}

// LockRow is one lock as the tables show it.
type LockRow struct {
	Name    string
	Kind    string
	Holders []HolderRow
	// PTTLMS is the remaining lease in ms; negative means no expiry.
	PTTLMS int64
	// FirstSeen is when the console first discovered the lock; zero if unknown.
	FirstSeen time.Time
}

// LimiterRow is one limiter as the tables and wall tiles show it.
type LimiterRow struct {
	Name       string
	Kind       string
	Rate       int64
	IntervalMS float64
	PerSecond  float64
	Available  int64
	// Window is the last complete 1 s window.
	Window Counts
	// Spark holds window summaries oldest first, one per SparkStepMS, at
	// most SparkPoints of them.
	Spark []Counts
}

// OverviewPage is GET /.
type OverviewPage struct {
	Layout
	LockCount    int
	LimiterCount int
	Busiest      []LimiterRow // already sorted, busiest first
	Events       []EventRow   // newest first
}

// LocksPage is GET /locks.
type LocksPage struct {
	Layout
	Match string // the glob filter; "" shows every lock
	Locks []LockRow
}

// LockDetailPage is GET /locks/{name}.
type LockDetailPage struct {
	Layout
	Lock    LockRow
	Channel string // the unlock channel waiters listen on
	Stats   Counts // lock attempts over the last window
}

// ForceUnlockConfirmPage is GET /locks/{name}/force-unlock?holder=.
type ForceUnlockConfirmPage struct {
	Layout
	Name    string
	Holder  string
	Channel string
	Count   int64 // the holder's reentry count, all of which is dropped
}

// ErrorPage renders any failed request as HTML.
type ErrorPage struct {
	Layout
	Status  int
	Message string
	// Holders are the current holders when a force-unlock lost a race (409).
	Holders []HolderRow
	// Back is where the "back" link goes; "" means the overview.
	Back string
}

// LimitersPage is GET /limiters.
type LimitersPage struct {
	Layout
	Limiters []LimiterRow
}

// Edit form field names, shared with the handler that parses the form.
const (
	FieldRate       = "rate"
	FieldIntervalMS = "interval_ms"
)

// EditForm is the limiter edit form as submitted (or prefilled).
type EditForm struct {
	Rate       string
	IntervalMS string
	// Errors maps a field name (FieldRate, FieldIntervalMS) to its message;
	// the "" key holds a message about the form as a whole.
	Errors map[string]string
}

// LimiterDetailPage is GET /limiters/{name} and the 400 re-render of its form.
type LimiterDetailPage struct {
	Layout
	Limiter LimiterRow
	Form    EditForm
	Rolling []RollingRow // newest first
}

// RollingRow is one 200 ms step of seed 001's rolling summary: the 1 s
// window ending at At.
type RollingRow struct {
	At       time.Time
	Acquired int64
	Rejected int64
	Errors   int64
}

// EventsPage is GET /events.
type EventsPage struct {
	Layout
	Events []EventRow // newest first
}

// EventRow is one lock event; Type is "unlock", "force-unlock" or "expired".
type EventRow struct {
	Type    string
	Name    string
	Channel string
	Message string
	Holder  string
	At      time.Time
}

// WallPage is GET /wall.
type WallPage struct {
	Layout
	Limiters  []LimiterRow
	LockCount int
	Events    []EventRow // newest first
}

// LockURL is the detail page of a lock; the name is one escaped segment.
func LockURL(name string) string { return "/locks/" + url.PathEscape(name) }

// LimiterURL is the detail page of a limiter.
func LimiterURL(name string) string { return "/limiters/" + url.PathEscape(name) }

// ForceUnlockURL is the confirmation page (GET) and the action (POST)
// that breaks a lock.
func ForceUnlockURL(name string) string { return LockURL(name) + "/force-unlock" }

// ForceUnlockConfirmURL is the confirmation page for one holder.
func ForceUnlockConfirmURL(name, holder string) string {
	return ForceUnlockURL(name) + "?holder=" + url.QueryEscape(holder)
}

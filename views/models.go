// Package views holds the console's server-rendered pages: one view model
// per screen and one templ component that takes it. Views read nothing
// from Redis: handlers copy what a page shows into these plain types, which
// keeps templates testable with literals. Only the kind names come from
// store/inspect, where they are defined.
package views

//go:generate go tool templ generate

import (
	"net/url"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// Nav items; Layout.Active selects the highlighted one.
const (
	NavOverview = "overview"
	NavLocks    = "locks"
	NavLimiters = "limiters"
	NavEvents   = "events"
	NavWall     = "wall"
	NavAudit    = "audit"
)

// Flash kinds for Layout.FlashKind.
const (
	FlashOK    = "ok"
	FlashError = "error"
)

// Live display parameters shared with the static/*.js client through data attributes,
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
	Flash     string // one-shot message shown on top, e.g. after a redirect
	FlashKind string // FlashOK or FlashError
	RedisDown bool   // the last Redis call failed; pages show a banner
	// NodesDown are the Redis masters the console's last probe found down
	// (one of a Cluster's masters, say); pages name them in a banner.
	NodesDown []string
	// Role is who is signed in ("admin", "viewer"); "" shows no identity.
	Role string
	// ReadOnly hides the forms that change anything (a viewer's pages).
	ReadOnly bool
	// CanSignOut shows the sign-out button (a browser session exists).
	CanSignOut bool
	// Now is the instant the page describes; ages and countdowns are
	// relative to it. Zero means time.Now() at render time.
	Now time.Time
	// Deadlocks counts the wait-for cycles the console sees; the overview
	// and the wall show a banner while there are any.
	Deadlocks int
}

// Counts are outcomes over one window.
type Counts struct {
	Acquired int64
	Rejected int64
	Errors   int64
}

// Total is every outcome in the window.
func (c Counts) Total() int64 { return c.Acquired + c.Rejected + c.Errors }

// HolderRow is one owner of a lock: the hash field (a token lock's token)
// and its reentry count.
type HolderRow struct {
	ID    string
	Count int64
	// Mode is "read" or "write" for a read-write lock holder.
	Mode string
	// LeaseMS is a reader's own remaining lease (0: not known).
	LeaseMS int64
	// Who names the holder's client in words ("" when not known); HeldMS
	// is how long it has held the lock (HeldSinceSeen: counted from the
	// console's first sight, a foreign holder); RenewedAgoMS when it last
	// renewed (0: not recorded).
	Who           string
	HeldMS        int64
	HeldSinceSeen bool
	RenewedAgoMS  int64
}

// WaiterRow is one place in a lock's queue (a fair lock's thread, a store
// Lock call), in queue order.
type WaiterRow struct {
	ID string
	// Owner is the holder field the waiter takes when granted; Who names
	// its client in words ("" when not known).
	Owner       string
	Who         string
	Deadline    time.Time
	RemainingMS int64 // negative: its place timed out (stale)
	// WaitingMS is how long it has waited; -1 when not known (Redisson's
	// fair queue keeps no arrival).
	WaitingMS int64
	Channel   string
}

// Stale reports a waiter whose place timed out; the next operation on the
// lock drops it from the queue.
func (w WaiterRow) Stale() bool { return w.RemainingMS <= 0 }

// LockRow is one lock as the tables show it.
type LockRow struct {
	Name    string
	Kind    string
	Holders []HolderRow
	// PTTLMS is the remaining lease in ms; negative means no expiry.
	PTTLMS int64
	// FirstSeen is when the console first discovered the lock; zero if unknown.
	FirstSeen time.Time
	// Mode is a read-write lock's "read" or "write".
	Mode string
	// Waiters are a fair lock's queue (at most a page of it); WaitersTotal
	// is the whole queue's length.
	Waiters      []WaiterRow
	WaitersTotal int64
	// Subscribers counts the clients subscribed to a held Redisson lock's
	// unlock channel beside the console (its waiters, when they can only
	// be counted); nil when not counted.
	Subscribers *int64
	// FencingToken is a fenced lock's current token.
	FencingToken int64
	// Deadline is a deadline lock's deadline.
	Deadline time.Time
	// Channel is where releases are announced ("" for token locks).
	Channel string
	// Stale is set when the row shows the lock as last read.
	Stale *StaleMark
	// Wait is the lock's acquisitions and waits over the last 10 s.
	Wait WaitRow
	// WaitingSince is when its longest current waiter queued (epoch ms,
	// 0: nobody waits, or none says since when); pages count the wait
	// from it.
	WaitingSince int64
	// Recognised says what made the console take another library's key
	// for this kind ("" for lockwarden's and Redisson's own).
	Recognised string
}

// Fact is one thing another library's value says (a holder's host, a
// limiter's settings), in the order shown.
type Fact struct{ Name, Value string }

// StaleMark is an object shown as last read because its Redis node did
// not answer the latest sample.
type StaleMark struct {
	Node     string
	LastRead time.Time
	// ClusterDown: the node answers but the Cluster refuses every key.
	ClusterDown bool
}

// LimiterRow is one limiter as the tables and wall tiles show it.
type LimiterRow struct {
	Name       string
	Kind       string
	Rate       int64
	IntervalMS float64
	PerSecond  float64
	Available  int64
	// AvailableUnknown: Redis keeps no one number (a per-client limiter).
	AvailableUnknown bool
	// RejectionsHidden: other clients decide in their own scripts and Redis
	// keeps no trace of a rejection; Window.Rejected must not be shown as
	// the limiter's. Grants (when GrantsKnown) is what Redis does reveal.
	RejectionsHidden bool
	Grants           int64
	GrantsKnown      bool
	// Redisson rate limiter.
	Algorithm    string // "fixed-window", "sliding-window", "" before any acquire
	PerClient    bool
	ResetInMS    int64 // fixed window: until it refills
	NextFreeInMS int64 // sliding window: until the oldest grant returns
	KeepAliveMS  int64
	// Access counter.
	Count      int64
	Limit      int64
	LimitKnown bool
	TTLMS      int64 // remaining window; negative: no expiry (stuck)
	// Window is the last complete 1 s window.
	Window Counts
	// Spark holds window summaries oldest first, one per SparkStepMS, at
	// most SparkPoints of them.
	Spark []Counts
	// Stale is set when the row shows the limiter as last read.
	Stale *StaleMark
	// Resettable: the console resets it (another library's limiter; an
	// access counter always is), and ResetText says what a reset does; it
	// has no rate of its own to edit.
	Resettable bool
	ResetText  string
	// Recognised and Facts are another library's limiter's: what made the
	// console take it for this kind, and what its value says.
	Recognised string
	Facts      []Fact
}

// OverviewPage is GET /.
type OverviewPage struct {
	Layout
	LockCount    int
	LimiterCount int
	Busiest      []LimiterRow // already sorted, busiest first
	Events       []EventRow   // newest first
	Alerts       []AlertRow   // firing, critical first
	// Charts are the last 24 h of the busiest limiters.
	Charts []LimiterChart
	// LockCharts are the last 24 h of waits of the most contended locks.
	LockCharts []WaitStrip
}

// LocksPage is GET /locks: one page of the filtered, sorted list.
type LocksPage struct {
	Layout
	Match string // the glob filter; "" shows every lock
	Locks []LockRow
	Nav   ListNav
}

// ListNav is a list page's filters, sort links and paging links; every
// link is a plain URL so paging works without JavaScript.
type ListNav struct {
	// List is what the page lists ("locks", "limiters"): static/lists.js
	// keeps the footer's counts true from the frames' objects of that list.
	List  string
	Total int // rows passing the filters, on every page
	Shown int // rows on this page
	// All counts the list before its filters; Empty is what the page
	// says when no row passes them (what was searched, among how many).
	All      int
	Empty    string
	Q        string // the search (?q=)
	Match    string
	Kind     string
	Kinds    []string // the kinds ?kind= accepts
	Sort     string
	Desc     bool
	Sorts    []SortLink
	NextURL  string // "" on the last page
	FirstURL string // "" on the first page
	Paged    bool   // this is not the first page
	// Partial: the page is not the whole list by name, so live updates
	// touch only the rows on it; on a complete page rows of objects
	// discovered later are added.
	Partial bool
}

// SortLink is one sortable column's link: Active is the current sort,
// and the link flips its order.
type SortLink struct {
	Name   string
	URL    string
	Active bool
	Desc   bool
}

// LockDetailPage is GET /locks/{name}.
type LockDetailPage struct {
	Layout
	Lock    LockRow
	Channel string // the unlock channel waiters listen on
	Stats   Counts // lock attempts over the last window
	Waits   []WaitRow
	// Timeline is who held the lock over the span asked for.
	Timeline LockTimeline
	// Gone: the lock's key does not exist; the page shows its history
	// only (Lock has its name alone).
	Gone bool
	// Deadlocks are the wait-for cycles this lock is part of.
	Deadlocks []DeadlockView
	// Violations are the lock's lease violations of the last day, oldest
	// first: holds whose exclusion may have been broken.
	Violations []LeaseViolationRow
	// PastDeadlocks are the wait-for cycles of the last day this lock was
	// part of that ended, newest first.
	PastDeadlocks []PastDeadlockView
	// Why answers what the page is opened for, before any table.
	Why *WhyPanel
}

// LeaseViolationRow is one lease violation in words.
type LeaseViolationRow struct {
	Kind     string
	At       time.Time
	Message  string
	Probable bool
}

// The kinds the views render in their own way, as the rows carry them
// (strings), spelled once in store/inspect.
const (
	KindRedissonLimiter = string(inspect.KindRedissonLimiter)
	KindCounter         = string(inspect.KindCounter)
	KindTokenBucket     = string(inspect.KindTokenBucket)
	KindFairLock        = string(inspect.KindFairLock)
	KindFencedLock      = string(inspect.KindFencedLock)
	KindRWLock          = string(inspect.KindRWLock)
	KindTokenLock       = string(inspect.KindTokenLock)
	KindDeadlineLock    = string(inspect.KindDeadlineLock)
)

// FieldReason is the force-unlock form's required reason, recorded in the
// audit trail.
const FieldReason = "reason"

// MaxReasonLen bounds the reason (bytes).
const MaxReasonLen = 500

// ForceUnlockConfirmPage is GET /locks/{name}/force-unlock?holder=.
type ForceUnlockConfirmPage struct {
	Layout
	Name   string
	Kind   string
	Holder string
	// HolderWho names the holder's client (application, host, pid,
	// owner); "" when the console knows no name for it.
	HolderWho string
	Count     int64 // the holder's reentry count, all of which is dropped
	// The plan: what the force-unlock does to Redis, from the lock's kind.
	// Channel "" means nothing is published.
	Channel string
	Message string // published on Channel; "" means "0"
	// Deletes are the keys deleted besides Name (Name itself is deleted
	// unless RemovesField is set: then only the holder's field goes).
	Deletes      []string
	RemovesField bool
	// Keeps are related keys deliberately left as they are.
	Keeps []string
	// Summary says it in one sentence.
	Summary string
	// Reason is the typed reason after a rejected submission; ReasonError
	// says what was wrong with it.
	Reason      string
	ReasonError string
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
	Nav      ListNav
}

// Edit form field names, shared with the handler that parses the form.
const (
	FieldRate       = "rate"
	FieldIntervalMS = "interval_ms"
	// FieldKeepState is a Redisson limiter's choice: KeepStateKeep or
	// KeepStateReset.
	FieldKeepState = "keep_state"
	KeepStateKeep  = "keep"
	KeepStateReset = "reset"
)

// EditForm is the limiter edit form as submitted (or prefilled).
type EditForm struct {
	Rate       string
	IntervalMS string
	KeepState  string // "", KeepStateKeep or KeepStateReset
	Reason     string
	// Errors maps a field name (FieldRate, FieldIntervalMS) to its message;
	// the "" key holds a message about the form as a whole.
	Errors map[string]string
}

// LimiterDetailPage is GET /limiters/{name} and the 400 re-render of its form.
type LimiterDetailPage struct {
	Layout
	Limiter LimiterRow
	Form    EditForm
	// KeepText and ResetText say what each choice of a Redisson limiter's
	// edit does, for the rate in the form, before it is submitted.
	KeepText  string
	ResetText string
	// Clients are a per-client Redisson limiter's windows.
	Clients []ClientRow
	Rolling []RollingRow // newest first
	// Chart is the limiter's history over the span asked for.
	Chart LimiterChart
	// WhatIf is the what-if for the rates typed in Form; nil when none
	// was asked for.
	WhatIf *WhatIf
	// Why answers what the page is opened for, before any table.
	Why *WhyPanel
	// Confirm is an edit waiting for its confirmation (the form's second
	// step); nil shows the form.
	Confirm *EditConfirm
}

// ClientRow is one client's window of a per-client Redisson limiter.
type ClientRow struct {
	ClientID  string
	Available int64
	Used      int64
	ResetInMS int64
}

// ResetCounterURL is the form action that resets an access counter.
func ResetCounterURL(name string) string { return LimiterURL(name) + "/reset" }

// RollingRow is one 200 ms step of the limiter detail's rolling table: the 1 s
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
	// Q (a part of the lock's name) and Type filter them; Types are the
	// types there are; Empty says what an empty list searched.
	Q, Type string
	Types   []string
	Empty   string
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
	Limiters  []LimiterRow // the tiles: alerting first, then the busiest
	LockCount int
	// Locks are the first WallLocks locks in LockSort's order: "name", or
	// "contention" (the most contended acquisitions over 10 s first, then
	// the highest p99 wait).
	Locks    []LockRow
	LockSort string
	Events   []EventRow // newest first
	Alerts   []AlertRow // firing, critical first
	Rest     WallRest
}

// WallLocks is how many locks the wall lists.
const WallLocks = 10

// WallRest sums up the limiters without a tile.
type WallRest struct {
	Count    int
	Acquired int64
	Rejected int64
}

// LockURL is the detail page of a lock; the name is one escaped segment.
func LockURL(name string) string { return "/locks/" + url.PathEscape(name) }

// LimiterURL is the detail page of a limiter.
func LimiterURL(name string) string { return "/limiters/" + url.PathEscape(name) }

// ForceUnlockURL is the confirmation page (GET) and the action (POST)
// that breaks a lock.
func ForceUnlockURL(name string) string { return LockURL(name) + "/force-unlock" }

// LoginPage is GET /login and a refused sign-in.
type LoginPage struct {
	Layout
	Next  string // the local path to return to after signing in
	Error string // why the last attempt failed
}

// AuditPage is GET /audit.
type AuditPage struct {
	Layout
	Records []AuditRow // newest first
	// OlderURL is the page of the records older than these ("" when none
	// are); NewestURL goes back to the newest, on an older page.
	OlderURL, NewestURL string
}

// AuditRow is one audit record.
type AuditRow struct {
	At          time.Time
	Role        string
	Fingerprint string
	Remote      string
	Action      string
	Target      string
	// TargetWho is the target's name when it is a client the registry
	// knows (a release-all's); Before and After carry such names before
	// the ids they mention.
	TargetWho string
	Before    string
	After     string
	Outcome   string
	Reason    string
	Detail    string
}

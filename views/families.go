package views

import (
	"net/url"
	"strconv"

	"github.com/lockwarden/lockwarden/views/words"
)

// Limiter families: many keys of one limiter shape as one row
// (store/inspect/families.go).

// FamiliesPage is GET /families.
type FamiliesPage struct {
	Layout
	Families []FamilyRow
}

// FamilyPage is GET /families/{pattern}: one family and its top offenders.
type FamilyPage struct {
	Layout
	Family FamilyRow
}

// FamilyRow is one family with its spans.
type FamilyRow struct {
	ID   string // the counter pattern, or the per-client limiter's name
	Kind string // "counters" or "per-client"
	// Limit and WindowMS are 0 when not known.
	Limit    int64
	WindowMS int64
	Keys     int64 // members the last pass read
	// Resettable: the members are counters, which a reset deletes one by one.
	Resettable bool
	Spans      []FamilySpan // the minute, then the hour
}

// FamilySpan is a family's totals and rankings over one span.
type FamilySpan struct {
	Name         string // "minute" or "hour"
	Readings     int64
	Admitted     int64
	Rejected     int64
	MostRejected []Offender
	MostAdmitted []Offender
	NearestLimit []Offender
}

// Offender is one member of a ranking.
type Offender struct {
	ID       string // what the member is called (a counter's key, a client id)
	Key      string // the member's key, what a reset deletes
	Admitted int64
	Rejected int64
	Fill     float64 // the highest share of the limit seen
}

// FieldKey is the family reset form's member key.
const FieldKey = "key"

// FamiliesURL lists the families.
const FamiliesURL = "/families"

// FamilyURL is the page of the family with id.
func FamilyURL(id string) string { return FamiliesURL + "/" + url.PathEscape(id) }

// FamilyResetURL is the action that resets one member of a family.
func FamilyResetURL(id string) string { return FamilyURL(id) + "/reset" }

// fillText is a share of the limit in percent; "—" when unknown.
func fillText(f float64) string {
	if f <= 0 {
		return "—"
	}
	return strconv.FormatFloat(f*100, 'f', 0, 64) + " %"
}

// limitText says a family's limit per window, or that it is not known.
func (r FamilyRow) limitText() string {
	if r.Limit <= 0 {
		return "not known"
	}
	if r.WindowMS <= 0 {
		return itoa(r.Limit) + " per window"
	}
	return itoa(r.Limit) + " per " + words.Duration(r.WindowMS)
}

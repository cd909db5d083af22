package views

import "time"

// WhyPanel is the answer at the top of a lock's or a limiter's page: one
// paragraph (web/why builds it, the same words as /api/why/{name}), the
// facts behind it and the ways out.
type WhyPanel struct {
	// State is the answer's one word: "held", "contended", "stuck",
	// "deadlocked", "free"; "idle", "admitting", "rejecting", "gone".
	State   string
	Answer  string
	Facts   []WhyFact
	Actions []WhyAction
}

// WhyFact is one fact, said for a person.
type WhyFact struct {
	Label string
	Value string
}

// WhyAction is one way out: the console page that does it (a confirmation
// first where it changes anything) and the terminal command that does
// the same.
type WhyAction struct {
	Action  string
	Label   string
	URL     string
	Command string
	Does    string
	// Admin: shown to admins only.
	Admin bool
}

// whyClass is the panel's class: its state picks the colour of its edge.
func whyClass(state string) string {
	switch state {
	case "deadlocked", "stuck", "rejecting":
		return "why why-bad"
	case "contended", "gone":
		return "why why-warn"
	}
	return "why"
}

// longestWaitText is how long a lock's longest current waiter has waited
// at now ("–" when nobody waits or none says since when), as ageText says
// it; static/waits.js counts it on from the frames' waiting_since.
func longestWaitText(since int64, now time.Time) string {
	if since <= 0 {
		return "–"
	}
	return ageText(now.Sub(time.UnixMilli(since)))
}

// searchHint is the search box's placeholder: what a list's search looks in.
func searchHint(list string) string {
	if list == "/locks" {
		return "name, holder, app, host, owner, client id"
	}
	return "name"
}

// emptyOr is s, or alt when s is "".
func emptyOr(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// holderName is who a holder is, or its id when nothing more is known.
func holderName(who, id string) string {
	if who != "" {
		return who
	}
	return id
}

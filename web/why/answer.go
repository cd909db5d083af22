// Package why answers the question a person opens a lock's or a limiter's
// page with, in one plain paragraph and the facts behind it: who holds
// it, since when, whether that client lives, who waits and for how long,
// whether it is deadlocked and the safe way out; a limiter's rule in
// words, what the last second and minute did against it, when rejections
// started and what the last audited change did to them; a name the
// console listed within the hour and no longer does.
//
// It builds answers from what the console already holds (the snapshot,
// the client registry, the live windows, the history cache and the audit
// records web reads through it) and reads nothing itself: web hands it
// the inputs, and renders the same Answer on /api/why/{name}, in the
// panel at the top of each page, and `lockwarden why` prints it. It
// imports store/inspect, web/live, web/history and web/present.
package why

import (
	"net/url"
	"strings"
)

// States an answer is in: the word a list or a terminal shows beside the
// name.
const (
	StateFree       = "free"       // a lock nobody holds
	StateHeld       = "held"       // held, nobody waits
	StateContended  = "contended"  // held, and someone waits
	StateStuck      = "stuck"      // held by a client that stopped beating
	StateDeadlocked = "deadlocked" // part of a wait-for cycle
	StateIdle       = "idle"       // a limiter nobody used in the last second
	StateAdmitting  = "admitting"  // used, nothing rejected
	StateRejecting  = "rejecting"  // rejecting now
	StateGone       = "gone"       // a limiter whose key went
)

// Answer is GET /api/why/{name}: {"name", "kind", "state", "answer",
// "facts": {...}, "actions": [...]}.
type Answer struct {
	Name string `json:"name"`
	// Kind is the object's kind (store/inspect's words), as last seen.
	Kind  string `json:"kind"`
	State string `json:"state"`
	// Answer is the paragraph.
	Answer string `json:"answer"`
	// Facts are the numbers and names the paragraph is built from, by a
	// stable key; a key ending in _ms is a duration, _at an RFC 3339
	// instant.
	Facts map[string]any `json:"facts"`
	// Actions are the ways out, safest first.
	Actions []Action `json:"actions"`

	// order is the order the facts were found in, for the page's list.
	order []string
}

// Action is one way out: the page that does it (a confirmation first,
// where it changes anything) and the terminal command that does the same.
type Action struct {
	// Action names it: "force-unlock", "release-all", "edit", "reset".
	Action string `json:"action"`
	Label  string `json:"label"`
	// URL is the console's page for it (a path).
	URL string `json:"url"`
	// Command is the `lockwarden` command line, with '…' where the
	// person must add a reason.
	Command string `json:"command,omitempty"`
	// Does says what it does to Redis and who it wakes.
	Does string `json:"does,omitempty"`
	// Holder is the holder a force-unlock checks for; Client the client
	// a release-all releases.
	Holder string `json:"holder,omitempty"`
	Client string `json:"client,omitempty"`
	// Admin: only an admin may do it (the page shows it to admins only).
	Admin bool `json:"admin"`
}

// Fact is one fact in the order the answer found it.
type Fact struct {
	Key   string
	Value any
}

// FactList is a's facts in the order they were found.
func (a *Answer) FactList() []Fact {
	out := make([]Fact, 0, len(a.order))
	for _, k := range a.order {
		out = append(out, Fact{Key: k, Value: a.Facts[k]})
	}
	return out
}

// builder collects an answer's sentences and facts.
type builder struct {
	a    Answer
	text []string
}

func newBuilder(name, kind, state string) *builder {
	return &builder{a: Answer{Name: name, Kind: kind, State: state, Facts: map[string]any{}, Actions: []Action{}}}
}

// say adds a sentence.
func (b *builder) say(s string) {
	if s != "" {
		b.text = append(b.text, s)
	}
}

// fact records a fact (the first value of a key is kept in the order,
// a later one replaces its value).
func (b *builder) fact(k string, v any) {
	if _, ok := b.a.Facts[k]; !ok {
		b.a.order = append(b.a.order, k)
	}
	b.a.Facts[k] = v
}

func (b *builder) act(a Action) { b.a.Actions = append(b.a.Actions, a) }

func (b *builder) done() Answer {
	b.a.Answer = strings.Join(b.text, " ")
	return b.a
}

// ShellWord quotes s for a POSIX shell when it needs it: a command in an
// answer can be copied whole.
func ShellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '.' || r == ':' || r == '/' || r == '{' || r == '}' ||
			(r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9'))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// lockURL and limiterURL are the pages of an object (one escaped path
// segment, as views.LockURL).
func lockURL(name string) string    { return "/locks/" + url.PathEscape(name) }
func limiterURL(name string) string { return "/limiters/" + url.PathEscape(name) }

// forceUnlockAction is the holder-checked force-unlock of holder on lock.
func forceUnlockAction(lock, holder, who, does string) Action {
	return Action{Action: "force-unlock", Label: "Force-unlock the hold of " + who, Holder: holder, Admin: true,
		URL:     lockURL(lock) + "/force-unlock?" + url.Values{"holder": {holder}}.Encode(),
		Command: "lockwarden unlock " + ShellWord(lock) + " --holder " + ShellWord(holder) + " --reason '…'",
		Does:    does}
}

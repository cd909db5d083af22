package apiref

// The entries. Names in paths are one segment: escape a "/" in a name as
// %2F (lockwarden's terminal client does).

// listParams are the parameters of the lock and limiter lists.
func listParams(sorts, kinds, search string) []Param {
	return []Param{
		{Name: "q", In: InQuery, Says: "search, any case: " + search + " (at most 256 bytes)"},
		{Name: "match", In: InQuery, Says: "a glob on names, as Redis MATCH reads it: * ? [abc] [^a] \\x (at most 256 bytes)"},
		{Name: "kind", In: InQuery, Says: "one kind: " + kinds},
		{Name: "sort", In: InQuery, Says: "one of " + sorts + " (default name)"},
		{Name: "order", In: InQuery, Says: "asc (default) or desc"},
		{Name: "limit", In: InQuery, Says: "rows per page, 1 to 500 (default 100)"},
		{Name: "cursor", In: InQuery, Says: "next_cursor of the page before; absent for the first page"},
	}
}

var (
	name   = Param{Name: "name", In: InPath, Required: true, Says: "the object's key in Redis"}
	client = Param{Name: "id", In: InPath, Required: true, Says: "the client's UUID (the part of a holder id before the colon)"}
	span   = Param{Name: "span", In: InQuery, Says: "1h (default: 10 s steps) or 24h (1 min steps)"}
)

const (
	lockKinds    = "reentrant, fair, fenced, rwlock, token-lock, deadline-lock"
	limiterKinds = "token-bucket, redisson-rate-limiter, counter"
)

var api = []Route{
	{Method: "GET", Path: "/api", Role: Viewer, Summary: "this reference: HTML for a browser, JSON for a client that asks for application/json (or ?format=json)",
		Params: []Param{{Name: "format", In: InQuery, Says: "json for the JSON form whatever the Accept header says"}},
		Answer: `{"routes": [{"method", "path", "role", "summary", "params": [{"name", "in", "required", "says"}], "body", "answer", "errors", "page"}], "errors": [...]}`},
	{Method: "GET", Path: "/api/openapi.json", Role: Viewer, Summary: "this reference as an OpenAPI 3.0 document",
		Answer: `{"openapi": "3.0.3", "paths": {...}}`},

	{Method: "GET", Path: "/api/locks", Role: Viewer, Summary: "one page of the locks the console sees, from its latest look at Redis (no Redis read per request)",
		Params: listParams("name, lease, age, holder, contention (deadlocked, then the longest current wait, then the waits that ended), waiters", lockKinds,
			"the name, or who holds or waits: holder or owner id, client id, application, host"),
		Answer: `{"locks": [{"name", "kind", "holders": [{"id", "count", "client": {"app", "host", "pid", "version", "heartbeat_age_ms", "gone"}, "held_ms", "renewed_ago_ms", "who"}], "pttl_ms" (-1: no expiry), "channel", "waiters_total", "longest_wait_ms", "wait": {"window_s": 10, "acquired", "contended", "p50_ms", "p99_ms", "max_ms"}, ...}], "total": rows the filters pass, "all": every lock, "next_cursor": "" on the last page}`},
	{Method: "GET", Path: "/api/locks/:name", Role: Viewer, Summary: "one lock, read from Redis now: its holders, every waiter, its waits over 1 s, 10 s and 1 min, what a force-unlock of each holder would do, its lease violations and past deadlocks; a lock nobody holds that the console listed within the hour or keeps the history of answers \"state\": \"free\" with when and by whom it was last held, its waits and its history",
		Params: []Param{name},
		Answer: `{"name", "kind", "state": "held|free", "holders": [...], "waiters": [{"id", "owner", "position", "waiting_ms", "remaining_ms", "who"}], "longest_wait_ms", "wait_windows": [...], "force_unlock": {"<holder>": {"deletes", "channel", "message", "summary"}}, "lease_violations": [...], "past_deadlocks": [{"cycle", "since", "ended"}], ...}; free: {"name", "state": "free", "free_since", "last_held": {"holder", "client", "from", "to", "ended"}, "wait", "wait_windows", "history": {"holds", "wait", "kept"}, "lease_violations", "past_deadlocks"}`,
		Errors: []string{"404 nobody holds it, and the console neither listed it within the hour nor keeps its history"}},
	{Method: "GET", Path: "/api/locks/:name/history", Role: Viewer, Summary: "who held the lock over the span, and its waits per minute (from the history the console keeps in Redis)",
		Params: []Param{name, span},
		Answer: `{"holds": [{"holder", "client": {"app", "host", "pid"}, "from", "to", "ended": "released|handed-off|expired|force-unlocked"}], "wait": [{"t", "acquired", "contended", "p50_ms", "p99_ms", "max_ms"}], "kept"}; header History-Through: the flush time (ms) it ends at`,
		Errors: []string{"404 the console keeps no history (--history-top 0), or no lock of that name and none kept"}},
	{Method: "POST", Path: "/api/locks/:name/force-unlock", Role: Admin, Summary: "break the lock, only if holder still holds it (as the lock's own release would, waking its waiters); audited with the reason",
		Params: []Param{name}, Body: `{"holder": "<the holder id you saw>", "reason": "why, kept in the audit trail"}`,
		Answer: `{"released": true}`,
		Errors: []string{"400 holder or reason missing", "409 another holder holds it now: {\"error\", \"holders\": [...]}, nothing changed"}},
	{Method: "GET", Path: "/api/why/:name", Role: Viewer, Summary: "why a lock or limiter is as it is, in one paragraph, with the facts behind it and the ways out; a name the console listed within the hour answers with since when it is free and who held it last",
		Params: []Param{name},
		Answer: `{"name", "kind", "state": "held|contended|stuck|deadlocked|free|idle|admitting|rejecting|gone", "answer": "<paragraph>", "facts": {"holder", "app", "host", "pid", "held_ms", "client_alive", "lease_ms", "longest_wait_ms", "rule", ...}, "actions": [{"action", "label", "url", "command", "does"}]}`,
		Errors: []string{"404 no lock or limiter of that name now, nor one the console listed within the hour"}},

	{Method: "GET", Path: "/api/limiters", Role: Viewer, Summary: "one page of the limiters the console sees, each with its last second",
		Params: listParams("name, rate, acquired, rejected, ratio", limiterKinds, "the name"),
		Answer: `{"limiters": [{"name", "kind", "rate" (a token bucket's capacity), "interval_ms" (a token bucket's refill: one permit every interval_ms), "per_second", "available", "window": {"acquired", "rejected" (null where Redis keeps no record), "errors"}, ...}], "total", "all", "next_cursor"}`},
	{Method: "GET", Path: "/api/limiters/:name", Role: Viewer, Summary: "one limiter, read from Redis now (a per-client Redisson limiter with its clients)",
		Params: []Param{name}, Answer: `{"name", "kind", "rate", "interval_ms", "per_second", "available", "window", ...}`},
	{Method: "GET", Path: "/api/limiters/:name/history", Role: Viewer, Summary: "the limiter's admitted, rejected and errors per step over the span, and the audited changes in it",
		Params: []Param{name, span},
		Answer: `{"step_s", "points": [{"t", "acquired", "rejected", "errors"}], "kept", "changes": [audit records]}; header History-Through`,
		Errors: []string{"404 the console keeps no history, or no limiter of that name and none kept"}},
	{Method: "POST", Path: "/api/limiters/:name/what-if", Role: Viewer, Summary: "replay the last hour's demand at other settings; changes nothing",
		Params: []Param{name}, Body: `{"rate": 40, "interval_ms": 25}`,
		Answer: `{"span_s", "attempts", "actual": {"admitted", "rejected"}, "predicted": {"admitted", "rejected", "low", "high"}, "check", "lower_bound", "points": [...]}`,
		Errors: []string{"400 a value past the kind's bounds (the message says them)", "422 this kind cannot be replayed (a per-client limiter)", "429 too many what-ifs at once: retry after Retry-After"}},
	{Method: "PUT", Path: "/api/limiters/:name", Role: Admin, Summary: "change the rate through the limiter's own script; audited with the settings before and after and the reason",
		Params: []Param{name},
		Body:   `{"rate": 40, "interval_ms": 25, "reason": "partner launch", "keep_state": false}  (a token bucket: rate is its capacity, interval_ms its refill; keep_state is a Redisson limiter's: true keeps the grants, false restarts them as its setRate does)`,
		Answer: `the limiter as GET /api/limiters/{name} says it`,
		Errors: []string{"400 reason missing, a value past the kind's bounds (token bucket: capacity 1 to 1,000,000, refill 0.001 ms to a day; Redisson: a whole-ms interval, at most 1,000,000 a second), or a counter (reset it instead)"}},
	{Method: "POST", Path: "/api/limiters/:name/reset", Role: Admin, Summary: "reset an access counter (delete its key: the next hit starts a new window); audited",
		Params: []Param{name}, Body: `{} or no body`, Answer: `{"reset": true}`},

	{Method: "GET", Path: "/api/families", Role: Viewer, Summary: "the limiter families (the keys of one --counter pattern, a per-client Redisson limiter's clients) with their top offenders",
		Params: []Param{{Name: "match", In: InQuery, Says: "a glob on the families' patterns"}, {Name: "span", In: InQuery, Says: "minute or hour (default both)"}},
		Answer: `{"families": [{"pattern", "kind", "limit", "window_ms", "keys", "minute": {...}, "hour": {...}}]}`},
	{Method: "GET", Path: "/api/families/:name", Role: Viewer, Summary: "one family, by its pattern",
		Params: []Param{{Name: "name", In: InPath, Required: true, Says: "the family's pattern"}, {Name: "span", In: InQuery, Says: "minute or hour"}}},
	{Method: "POST", Path: "/api/families/:name/reset", Role: Admin, Summary: "reset one member counter of a counter family; audited",
		Params: []Param{{Name: "name", In: InPath, Required: true, Says: "the family's pattern"}}, Body: `{"key": "<a member's key>"}`, Answer: `{"reset": true}`,
		Errors: []string{"400 key missing, not a member, or the family is not of counters"}},

	{Method: "GET", Path: "/api/clients", Role: Viewer, Summary: "every client seen holding or waiting, and every registered one, with what each holds",
		Answer: `{"clients": [{"id", "registered", "app", "host", "pid", "version", "heartbeat_age_ms", "gone", "holds": [{"lock", "kind", "holder", "what", "count", "place"}]}]}`},
	{Method: "POST", Path: "/api/clients/:id/release-all", Role: Admin, Summary: "force-unlock, holder-checked, every lock the client holds and drop its places in queues; each audited with the reason",
		Params: []Param{client}, Body: `{"reason": "pod crashed"}`,
		Answer: `{"client", "released": [{"lock", "holder", "released", "error"}]}`,
		Errors: []string{"400 a malformed id or no reason", "404 no client of that id is registered or holds anything"}},
	{Method: "GET", Path: "/api/deadlocks", Role: Viewer, Summary: "the wait-for cycles: holders that each hold one lock and wait for another's",
		Answer: `{"deadlocks": [{"since", "cycle": [{"lock", "holder", "waits_for", "client", "who", "youngest"}]}]}`},
	{Method: "GET", Path: "/api/lease-violations", Role: Viewer, Summary: "holds whose exclusion may have been broken in the last 24 h, oldest first: a lease that ran out while its client still beat and another took the lock, a release or renewal that came after its hold ended, a renewal after the holder's own release, an eviction",
		Params: []Param{{Name: "lock", In: InQuery, Says: "one lock's name: only its violations"}},
		Answer: `{"violations": [{"lock", "kind": "expired-while-working|released-after-expiry|renewed-after-release|evicted", "holder", "client": {"app", "host", "pid"} (null: not a registered client), "next_holder", "next_client", "at", "late_ms", "probable" (what the layout cannot prove: a holder that is not a store client), "reason"}]}`},
	{Method: "GET", Path: "/api/alerts", Role: Viewer, Summary: "the firing alerts, critical first",
		Answer: `{"alerts": [{"rule", "name", "severity", "since", "message"}]}`},
	{Method: "GET", Path: "/api/stats", Role: Viewer, Summary: "every object's last 1 s window, as of the console's latest look",
		Answer: `{"bucket_ms", "window_ms", "at", "limiters": {"<name>": {"acquired", "rejected", "errors"}}, "locks": {...}}`},
	{Method: "GET", Path: "/api/events", Role: Viewer, Summary: "the lock events the console remembers (unlock messages, force-unlocks, expiries), newest first",
		Params: []Param{{Name: "q", In: InQuery, Says: "a part of the lock's name, any case"}, {Name: "type", In: InQuery, Says: "unlock, force-unlock or expired"}},
		Answer: `{"events": [{"type", "name", "at", "channel", "message", "holder"}]}`},
	{Method: "GET", Path: "/api/audit", Role: Viewer, Summary: "the audit trail, newest first",
		Params: []Param{{Name: "limit", In: InQuery, Says: "1 to 500 (default 100)"}, {Name: "trail", In: InQuery, Says: "changes (default), refused or sign-ins"}},
		Answer: `{"records": [{"id", "time", "role", "fingerprint", "remote", "action", "target", "before", "after", "outcome", "reason", "detail"}]}`},
	{Method: "GET", Path: "/api/status", Role: Viewer, Summary: "how the console finds objects and what it costs Redis; the history's state",
		Answer: `{"keyspace_events", "scanning", "budget", "passes", "keys_scanned_total", "locks", "limiters", "recent": [...], "history": {...} or null}`},

	{Method: "GET", Path: "/ws", Role: Viewer, Summary: "websocket of live frames: \"stats\" five times a second (whole, then deltas: counts, leases, holders' who, waiters, waiting_since, waits, deadlocked), \"status\" when Redis comes or goes, \"alerts\" with the firing set, and each lock event"},
	{Method: "GET", Path: "/metrics", Role: Viewer, Summary: "Prometheus text: the console's own series and per-object ones (--metrics-top, --metrics-match)"},
	{Method: "GET", Path: "/healthz", Role: Anyone, Summary: "200 ok while the process serves"},
	{Method: "GET", Path: "/readyz", Role: Anyone, Summary: "200 ready when Redis answers and every master is up; 503 saying which is not",
		Errors: []string{"503 Redis or a master does not answer"}},
}

var pages = []Route{
	{Method: "GET", Path: "/", Role: Viewer, Summary: "overview: counts, firing alerts, the busiest limiters, recent events"},
	{Method: "GET", Path: "/wall", Role: Viewer, Summary: "full-screen wall", Params: []Param{{Name: "sort", In: InQuery, Says: "name (default) or contention for its locks"}}},
	{Method: "GET", Path: "/locks", Role: Viewer, Summary: "the locks list", Params: listParams("name, lease, age, holder, contention, waiters", lockKinds, "name, holder, app, host, owner, client id")},
	{Method: "GET", Path: "/locks/:name", Role: Viewer, Summary: "a lock's page: why, holders, waiters, waits, timeline", Params: []Param{name, span}},
	{Method: "GET", Path: "/locks/:name/force-unlock", Role: Viewer, Summary: "what breaking the lock would do, for one holder", Params: []Param{name, {Name: "holder", In: InQuery, Required: true, Says: "the holder id"}}},
	{Method: "POST", Path: "/locks/:name/force-unlock", Role: Admin, Summary: "the confirmation's button: break it, then back to /locks",
		Params: []Param{name, {Name: "holder", In: InForm, Required: true, Says: "the holder id"}, {Name: "reason", In: InForm, Required: true, Says: "why"}}},
	{Method: "GET", Path: "/limiters", Role: Viewer, Summary: "the limiters list", Params: listParams("name, rate, acquired, rejected, ratio", limiterKinds, "the name")},
	{Method: "GET", Path: "/limiters/:name", Role: Viewer, Summary: "a limiter's page: why, state, edit form, what-if, history",
		Params: []Param{name, span, {Name: "whatif", In: InQuery, Says: "1 to replay the last hour at ?rate= and ?interval_ms="}}},
	{Method: "POST", Path: "/limiters/:name", Role: Admin, Summary: "the edit form: without confirm=yes it answers the confirmation (the what-if first) and changes nothing; with it, it applies and redirects",
		Params: []Param{name, {Name: "rate", In: InForm, Required: true, Says: "permits per interval; a token bucket's capacity"},
			{Name: "interval_ms", In: InForm, Required: true, Says: "ms; a token bucket's refill"}, {Name: "keep_state", In: InForm, Says: "keep or reset (Redisson limiters)"},
			{Name: "reason", In: InForm, Required: true, Says: "why"}, {Name: "confirm", In: InForm, Says: "yes to apply"}}},
	{Method: "POST", Path: "/limiters/:name/reset", Role: Admin, Summary: "reset a counter, then back to /limiters", Params: []Param{name}},
	{Method: "GET", Path: "/families", Role: Viewer, Summary: "the limiter families", Params: []Param{{Name: "match", In: InQuery, Says: "a glob on their patterns"}}},
	{Method: "GET", Path: "/families/:name", Role: Viewer, Summary: "one family and its offenders", Params: []Param{{Name: "name", In: InPath, Required: true, Says: "the pattern"}}},
	{Method: "POST", Path: "/families/:name/reset", Role: Admin, Summary: "reset one member counter", Params: []Param{{Name: "name", In: InPath, Required: true, Says: "the pattern"}, {Name: "key", In: InForm, Required: true, Says: "the member"}}},
	{Method: "GET", Path: "/clients", Role: Viewer, Summary: "every client and what it holds"},
	{Method: "GET", Path: "/clients/:id/release-all", Role: Viewer, Summary: "what releasing a client would do, lock by lock, with a warning while it is alive", Params: []Param{client}},
	{Method: "POST", Path: "/clients/:id/release-all", Role: Admin, Summary: "the confirmation's button: release, then back to /clients",
		Params: []Param{client, {Name: "reason", In: InForm, Required: true, Says: "why"}}},
	{Method: "GET", Path: "/deadlocks", Role: Viewer, Summary: "the wait-for cycles, drawn, with the hold to break first"},
	{Method: "GET", Path: "/events", Role: Viewer, Summary: "the live event stream", Params: []Param{{Name: "q", In: InQuery, Says: "a part of the lock's name"}, {Name: "type", In: InQuery, Says: "unlock, force-unlock or expired"}}},
	{Method: "GET", Path: "/audit", Role: Viewer, Summary: "the audit trail", Params: []Param{{Name: "limit", In: InQuery, Says: "1 to 500"}, {Name: "trail", In: InQuery, Says: "changes, refused or sign-ins"}}},
	{Method: "GET", Path: "/status", Role: Viewer, Summary: "discovery and history, what they cost Redis"},
	{Method: "GET", Path: "/login", Role: Anyone, Summary: "the sign-in page", Params: []Param{{Name: "next", In: InQuery, Says: "a local path to return to"}}},
	{Method: "POST", Path: "/login", Role: Anyone, Summary: "sign in with a token (a session cookie)", Params: []Param{{Name: "token", In: InForm, Required: true, Says: "the admin or viewer token"}, {Name: "next", In: InForm, Says: "where to go after"}}},
	{Method: "POST", Path: "/logout", Role: Anyone, Summary: "end the session everywhere"},
	{Method: "GET", Path: "/static/*", Role: Anyone, Summary: "the stylesheet and scripts"},
	{Method: "GET", Path: "/favicon.ico", Role: Anyone, Summary: "the icon"},
}

package views

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/lockwarden/lockwarden/views/words"
)

// The formatting here is mirrored by static/core.js, which rewrites the same
// cells between page loads; keep the two in step.

func now(l Layout) time.Time {
	if l.Now.IsZero() {
		return time.Now()
	}
	return l.Now
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func intStr(n int) string { return strconv.Itoa(n) }

// num prints a float without trailing zeros and with at most two decimals,
// because token-bucket intervals like "2.0" ms are fractional but a rate of
// 333.3333 per second is noise at that precision.
func num(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "–"
	}
	return strconv.FormatFloat(math.Round(f*100)/100, 'f', -1, 64)
}

// pttlText is the remaining lease as people read it: to the tenth of a
// second under a minute (the lists count it down live), then as
// words.Duration says it.
func pttlText(ms int64) string {
	switch {
	case ms < 0:
		return "no expiry"
	case ms < 60_000:
		return fmt.Sprintf("%.1f s", float64(ms)/1000)
	}
	return words.Duration(ms)
}

// ageText is a duration since something, for "first seen … ago".
func ageText(d time.Duration) string { return words.Duration(max(0, d.Milliseconds())) }

func epochMS(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return itoa(t.UnixMilli())
}

// dateClock is an instant as people read it in a list that spans days:
// "2026-11-29 16:23:38 UTC" (the datetime attribute keeps the precision).
func dateClock(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.UTC().Format("2006-01-02 15:04:05") + " UTC"
}

// clock shows times in UTC with milliseconds: the rolling table steps by
// 200 ms and the console's viewers may sit in several time zones.
func clock(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.UTC().Format("15:04:05.000")
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// ratio is rejected over all outcomes; 0 without traffic.
func ratio(c Counts) float64 {
	if c.Total() == 0 {
		return 0
	}
	return float64(c.Rejected) / float64(c.Total())
}

func ratioText(c Counts) string {
	if c.Total() == 0 {
		return "–"
	}
	return strconv.FormatFloat(ratio(c)*100, 'f', 1, 64) + "%"
}

// RatioClass names the colour of a reject ratio: "ratio-idle" without
// traffic, then ok / warn / bad by RatioWarn and RatioBad.
func RatioClass(c Counts) string {
	switch r := ratio(c); {
	case c.Total() == 0:
		return "ratio-idle"
	case r >= RatioBad:
		return "ratio-bad"
	case r >= RatioWarn:
		return "ratio-warn"
	default:
		return "ratio-ok"
	}
}

func holdersText(hs []HolderRow) string {
	if len(hs) == 0 {
		return "–"
	}
	parts := make([]string, len(hs))
	for i, h := range hs {
		parts[i] = h.ID + " ×" + itoa(h.Count)
		if h.Mode != "" {
			parts[i] += " (" + h.Mode + ")"
		}
	}
	return strings.Join(parts, ", ")
}

// holdersWhoText says who the holders are and since when, for those the
// console knows anything about ("" when none); the list shows it under
// holdersText, which live frames keep current.
func holdersWhoText(hs []HolderRow) string {
	var parts []string
	for _, h := range hs {
		if h.Who != "" {
			parts = append(parts, holderWhoText(h))
		}
	}
	return strings.Join(parts, "; ")
}

// holderText says who holds it and since when: "orders-api on host-7 (pid
// 4211), owner 77, held 3 min 12 s, renewed 4 s ago", or the raw id with its
// count when nothing more is known.
func holderText(h HolderRow) string {
	s := h.ID
	if h.Who != "" {
		s = h.Who
	}
	if h.Count != 1 || h.Who == "" {
		s += " ×" + itoa(h.Count)
	}
	if h.Mode != "" {
		s += " (" + h.Mode + ")"
	}
	if h.HeldMS > 0 {
		s += ", held " + durText(h.HeldMS)
		if h.HeldSinceSeen {
			s += " (since the console first saw it)"
		}
	}
	if h.RenewedAgoMS > 0 {
		s += ", renewed " + agoText(h.RenewedAgoMS)
	}
	return s
}

// holderWhoText is holderText without the id and count, under the id on
// the lock's page.
func holderWhoText(h HolderRow) string {
	return holderText(HolderRow{ID: h.Who, Who: h.Who, Count: 1, HeldMS: h.HeldMS,
		HeldSinceSeen: h.HeldSinceSeen, RenewedAgoMS: h.RenewedAgoMS})
}

// deadlineText says how far a deadline is from now, either way.
func deadlineText(d, now time.Time) string {
	if d.Before(now) {
		return "passed " + durText(now.Sub(d).Milliseconds()) + " ago"
	}
	return "in " + durText(d.Sub(now).Milliseconds())
}

// durText is a duration as words.Duration says it: "3 min 12 s", "850 ms".
func durText(ms int64) string { return words.Duration(max(0, ms)) }

// agoText is "4.2 s ago" for a past instant ms milliseconds back.
func agoText(ms int64) string {
	if ms < 0 {
		return "never"
	}
	return words.Duration(ms) + " ago"
}

// eventDetail is the part of an event line after the lock name.
func eventDetail(e EventRow) string {
	switch e.Type {
	case "unlock":
		return fmt.Sprintf("%q on %s", e.Message, e.Channel)
	case "force-unlock":
		if e.Holder != "" {
			return "broken by the console, holder " + e.Holder
		}
		return "broken by the console"
	case "expired":
		return "lease ran out"
	default:
		return e.Message
	}
}

func pageTitle(l Layout) string {
	if l.Title == "" {
		return "lockwarden"
	}
	return l.Title + " · lockwarden"
}

func formValue(v string, fallback string, errs map[string]string) string {
	if v == "" && len(errs) == 0 {
		return fallback
	}
	return v
}

func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return t
	}
	return "Error"
}

// backURL keeps the back link on this site: only absolute paths are used.
func backURL(b string) string {
	if strings.HasPrefix(b, "/") && !strings.HasPrefix(b, "//") && !strings.HasPrefix(b, "/\\") {
		return b
	}
	return "/"
}

// actorText is an audit record's actor: role and token fingerprint.
func actorText(r AuditRow) string {
	role := r.Role
	if role == "" {
		role = "anonymous"
	}
	if r.Fingerprint == "" {
		return role
	}
	return role + " (" + r.Fingerprint + ")"
}

// leaseText is a read holder's own lease; "–" when not known (writers share
// the lock's lease).
func leaseText(ms int64) string {
	if ms <= 0 {
		return "–"
	}
	return pttlText(ms)
}

// forceUnlockLabel names the action by what it does to the kind.
func forceUnlockLabel(l LockRow) string {
	if l.Kind == KindRWLock && len(l.Holders) > 1 {
		return "Remove this holder…"
	}
	return "Force unlock…"
}

func strconvQuote(s string) string { return strconv.Quote(s) }

// planMessage is the payload a force-unlock publishes; Redisson's "0"
// unless the plan says otherwise.
func planMessage(m string) string {
	if m == "" {
		return "0"
	}
	return m
}

func boolStr(b bool) string { return strconv.FormatBool(b) }

// rateText is the rate column: a counter's registered limit, else the rate.
func rateText(l LimiterRow) string {
	if l.Kind == KindCounter && !l.LimitKnown {
		return "not registered"
	}
	if l.Kind == KindCounter {
		return itoa(l.Limit)
	}
	return itoa(l.Rate)
}

// availableField is the data-field the script updates: none when Redis
// keeps no single number, so a live frame cannot overwrite the words.
func availableField(l LimiterRow) string {
	if l.AvailableUnknown {
		return "available-unknown"
	}
	return "available"
}

func availableText(l LimiterRow) string {
	switch {
	case !l.AvailableUnknown:
		return itoa(l.Available)
	case l.PerClient:
		return "per client"
	}
	return "unknown"
}

// grantsWord names what Grants counts for the kind.
func grantsWord(l LimiterRow) string {
	if l.Kind == KindCounter {
		return "admitted"
	}
	return "granted"
}

// hiddenText is the short form of hiddenNotice, for table cells.
func hiddenText(l LimiterRow) string {
	if l.Kind == KindCounter && !l.LimitKnown {
		return "rejections not visible (limit not registered)"
	}
	return "rejections not visible"
}

// hiddenNotice explains, on the limiter's page, why no rejected count is shown.
func hiddenNotice(l LimiterRow) string {
	switch l.Kind {
	case KindRedissonLimiter:
		return "Rejections by Redisson clients are not visible: Redisson decides in its own scripts and Redis keeps its grants but no trace of a refusal. The grants are shown instead; the counts below cover only attempts made through lockwarden."
	case KindCounter:
		return "Rejections are not visible: the application decides against its own limit and Redis only keeps the hit count. Hits above the limit, when it is registered, are the count minus the limit."
	}
	return "Rejections are not visible for this limiter."
}

func rateTypeText(perClient bool) string {
	if perClient {
		return "per client (type 1): every client has its own window"
	}
	return "overall (type 0): one window for all clients"
}

func algorithmText(a string) string {
	switch a {
	case "fixed-window":
		return "fixed window (Redisson before 3.13.3)"
	case "sliding-window":
		return "sliding window (Redisson 3.13.3 and later)"
	}
	return "not known yet: nobody has acquired"
}

// nodesDownText is the banner naming the Redis masters that are down.
func nodesDownText(addrs []string) string {
	if len(addrs) == 1 {
		return "Redis node " + addrs[0] + " does not answer; the locks and limiters it holds are missing or stale below."
	}
	return "Redis nodes " + strings.Join(addrs, ", ") + " do not answer; the locks and limiters they hold are missing or stale below."
}

// staleText says why a row's numbers are old.
func staleText(m *StaleMark) string {
	node := m.Node
	if node == "" {
		node = "unknown"
	}
	last := ", last read " + clock(m.LastRead) + " UTC"
	if m.ClusterDown {
		return "Cluster down: node " + node + " refuses every key (CLUSTERDOWN)" + last
	}
	return "node " + node + " down" + last
}

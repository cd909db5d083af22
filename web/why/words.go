package why

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/lockwarden/lockwarden/views/words"
)

// How the paragraph says numbers: durations to the unit that matters,
// instants as UTC clock times (viewers sit in several time zones), counts
// with separators.

// clock is t as a UTC time of day, with the date when it is not now's day.
func clock(t, now time.Time) string {
	t, now = t.UTC(), now.UTC()
	if t.Year() == now.Year() && t.YearDay() == now.YearDay() {
		return t.Format("15:04:05") + " UTC"
	}
	return t.Format("2006-01-02 15:04:05") + " UTC"
}

// percent is part of whole: "12%", "<1%".
func percent(part, whole int64) string {
	if whole <= 0 {
		return "0%"
	}
	p := float64(part) * 100 / float64(whole)
	if p > 0 && p < 1 {
		return "<1%"
	}
	return strconv.FormatFloat(math.Round(p), 'f', 0, 64) + "%"
}

// plural is "1 waiter", "3 waiters".
func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return words.Count(n) + " " + many
}

// interval says a limiter's interval in words: "second", "10 s", "100 ms".
func interval(ms float64) string {
	switch {
	case ms == 1000:
		return "second"
	case ms == 60_000:
		return "minute"
	case ms == 3_600_000:
		return "hour"
	case ms >= 1000 && ms == math.Trunc(ms):
		return words.Duration(int64(ms))
	}
	return words.Number(ms) + " ms"
}

// Rule is a limiter's rule in words, by kind: a token bucket's sustained
// rate and burst ("500 per second, bursts up to 1,000"), a Redisson
// limiter's permits per interval ("20 per second", "100 per 10 s"), a
// counter's limit per window.
func Rule(kind string, rate int64, intervalMS, perSecond float64, limit int64, limitKnown bool) string {
	switch kind {
	case "token-bucket":
		return words.Number(perSecond) + " per second, bursts up to " + words.Count(rate)
	case "counter":
		if !limitKnown {
			return "no limit (no rule registers one for it: it only counts)"
		}
		return "at most " + words.Count(limit) + " per window"
	}
	return words.Count(rate) + " per " + interval(intervalMS)
}

// upper is s with its first letter capital.
func upper(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// dur is words.Duration of a span that cannot be negative.
func dur(ms int64) string { return words.Duration(max(0, ms)) }

package why

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// How the paragraph says numbers: durations to the unit that matters,
// instants as UTC clock times (viewers sit in several time zones), counts
// with separators.

// Duration is ms in words, to the unit that matters: "850 ms", "4.2 s",
// "3 min 12 s", "2 h 5 min", "3 d 4 h"; "–" for a negative ms (unknown).
// The terminal's words (cmd/lockwarden/internal/present) are these.
func Duration(ms int64) string {
	const (
		second = 1000
		minute = 60 * second
		hour   = 60 * minute
		day    = 24 * hour
	)
	two := func(n1 int64, u1 string, n2 int64, u2 string) string {
		if n2 == 0 {
			return fmt.Sprintf("%d %s", n1, u1)
		}
		return fmt.Sprintf("%d %s %d %s", n1, u1, n2, u2)
	}
	switch {
	case ms < 0:
		return "–"
	case ms < second:
		return fmt.Sprintf("%d ms", ms)
	case ms < 10*second:
		return strconv.FormatFloat(math.Floor(float64(ms)/100)/10, 'f', -1, 64) + " s"
	case ms < minute:
		return fmt.Sprintf("%d s", ms/second)
	case ms < hour:
		return two(ms/minute, "min", ms%minute/second, "s")
	case ms < day:
		return two(ms/hour, "h", ms%hour/minute, "min")
	}
	return two(ms/day, "d", ms%day/hour, "h")
}

// clock is t as a UTC time of day, with the date when it is not now's day.
func clock(t, now time.Time) string {
	t, now = t.UTC(), now.UTC()
	if t.Year() == now.Year() && t.YearDay() == now.YearDay() {
		return t.Format("15:04:05") + " UTC"
	}
	return t.Format("2006-01-02 15:04:05") + " UTC"
}

// Count is n with thousands separators: "1,204,000".
func Count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Number is f as a count when whole or at least 100 ("1,000", "1,235"),
// else to two decimals ("2.5"); "–" when it is not a number.
func Number(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "–"
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return Count(int64(f))
	}
	if math.Abs(f) >= 100 {
		return Count(int64(math.Round(f)))
	}
	return strconv.FormatFloat(math.Round(f*100)/100, 'f', -1, 64)
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
	return Count(n) + " " + many
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
		return Duration(int64(ms))
	}
	return Number(ms) + " ms"
}

// Rule is a limiter's rule in words, by kind: a token bucket's sustained
// rate and burst ("500 per second, bursts up to 1,000"), a Redisson
// limiter's permits per interval ("20 per second", "100 per 10 s"), a
// counter's limit per window.
func Rule(kind string, rate int64, intervalMS, perSecond float64, limit int64, limitKnown bool) string {
	switch kind {
	case "token-bucket":
		return Number(perSecond) + " per second, bursts up to " + Count(rate)
	case "counter":
		if !limitKnown {
			return "no limit (no rule registers one for it: it only counts)"
		}
		return "at most " + Count(limit) + " per window"
	}
	return Count(rate) + " per " + interval(intervalMS)
}

// upper is s with its first letter capital.
func upper(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// dur and count are the paragraph's Duration and Count.
func dur(ms int64) string { return Duration(max(0, ms)) }

func count(n int64) string { return Count(n) }

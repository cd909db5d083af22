// Package present lays the console's answers out for a terminal: leases,
// rules and percentages in words (durations and counts as views/words says
// them, as the pages do), tables cut to the terminal's width, sparklines.
// The verbs and `top` share it, so a lease reads the same in both.
package present

import (
	"math"
	"strconv"

	"github.com/charmbracelet/x/ansi"

	"github.com/lockwarden/lockwarden/views/words"
	"github.com/lockwarden/lockwarden/web/why"
)

// Lease is a lock's lease left in words; "no expiry" for -1.
func Lease(ms int64) string {
	if ms < 0 {
		return "no expiry"
	}
	return words.Duration(ms)
}

// Percent is part of whole as "12%" ("–" without a whole).
func Percent(part, whole int64) string {
	if whole <= 0 {
		return "–"
	}
	p := float64(part) * 100 / float64(whole)
	if p > 0 && p < 1 {
		return "<1%"
	}
	return strconv.FormatFloat(math.Round(p), 'f', 0, 64) + "%"
}

// Wrap breaks text into lines of at most width cells at spaces, and a
// word longer than a line (a lock name, a holder id) where it must;
// width <= 0 leaves it whole.
func Wrap(text string, width int) string {
	if width <= 0 {
		return text
	}
	return ansi.Wrap(text, width, "")
}

// Rule is a limiter's rule in words, by its kind (the console's kinds):
// a token bucket's sustained rate and burst ("500/s, burst 1,000"; its
// rate is its capacity), a Redisson limiter's permits per interval
// ("20/s", "100 per 10 s"), a counter's limit per window.
func Rule(kind string, rate int64, intervalMS, perSecond float64, limit int64, limitKnown bool) string {
	switch kind {
	case "token-bucket":
		return words.Number(perSecond) + "/s, burst " + words.Count(rate)
	case "counter":
		if !limitKnown {
			return "no limit set"
		}
		return words.Count(limit) + " per window"
	}
	if intervalMS == 1000 {
		return words.Count(rate) + "/s"
	}
	return words.Count(rate) + " per " + words.Duration(int64(intervalMS))
}

// ShellWord quotes s for a POSIX shell when it needs it.
func ShellWord(s string) string { return why.ShellWord(s) }

// Package words says the console's numbers the way a person on call reads
// them: durations to the unit that matters, counts with separators,
// fractions to two decimals. The console's pages (views, and static/core.js
// between page loads), answers (web/why), alerts (web/alert), edit errors
// (web/admin) and the terminal (cmd/lockwarden/internal/present) all say
// them with these, so a lease or a count reads the same wherever it is
// shown.
package words

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Duration is ms in words, to the unit that matters: "850 ms", "4.2 s",
// "3 min 12 s", "2 h 5 min", "3 d 4 h"; "–" for a negative ms (unknown).
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

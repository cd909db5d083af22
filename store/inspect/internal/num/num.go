// Package num parses the numbers lock and limiter layouts keep in Redis
// strictly, so a value another writer formatted differently is not taken
// for one of them.
package num

import (
	"math"
	"strconv"
	"strings"
)

// CanonicalInt accepts only what HINCRBY and INCR write: no sign other
// than a leading '-', no leading zeros, no spaces. "+1" or "01" means
// someone other than a lock script wrote it.
func CanonicalInt(s string) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || strconv.FormatInt(n, 10) != s {
		return 0, false
	}
	return n, true
}

// Finite parses a number as Lua's tonumber would for the values token
// bucket clients write ("500", "2.0", "1.5e3"), rejecting NaN, infinities,
// hex and blanks, which Go's ParseFloat would otherwise accept.
func Finite(s string) (float64, bool) {
	if s == "" || strings.ContainsAny(s, " \t\n_xXpPiInN") {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

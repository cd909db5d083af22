// Package glob matches names against patterns with Redis's glob rules (the
// ones SCAN MATCH and KEYS use), so discovery, the configured patterns and
// the console's ?match= filter all agree with what Redis itself would
// select. Package inspect exports it as GlobMatch, CompileGlob and Glob.
package glob

import "strings"

// Match reports whether s matches pattern with Redis's glob rules (the
// ones SCAN MATCH and KEYS use): '*' any run of bytes, '?' one byte,
// "[abc]", "[^a-z]" classes, '\' escapes. Matching is on bytes, as in
// Redis, so discovery, the configured patterns and the console's ?match=
// filter all agree with what Redis itself would select (a range's bounds
// over bytes >= 0x80 go by byte order; Redis compares them as C chars,
// signed on some builds).
//
// Every token but '*' consumes exactly one byte, so backtracking to the
// last '*' alone is enough and the cost stays O(len(pattern)*len(s)).
func Match(pattern, s string) bool {
	p, i := 0, 0
	star, starI := -1, 0
	for i < len(s) {
		if p < len(pattern) {
			if pattern[p] == '*' {
				star, starI = p, i
				p++
				continue
			}
			if n, ok := globToken(pattern, p, s[i]); ok {
				p += n
				i++
				continue
			}
		}
		if star < 0 {
			return false
		}
		starI++
		i, p = starI, star+1
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// globToken matches the single-byte token at pattern[p] against c and
// returns the token's length in the pattern.
func globToken(pattern string, p int, c byte) (int, bool) {
	switch pattern[p] {
	case '?':
		return 1, true
	case '\\':
		if p+1 < len(pattern) {
			return 2, pattern[p+1] == c
		}
		return 1, c == '\\'
	case '[':
		return globClass(pattern, p, c)
	default:
		return 1, pattern[p] == c
	}
}

// globClass matches a "[...]" class starting at pattern[p]. An unclosed
// class runs to the end of the pattern, as in Redis.
func globClass(pattern string, p int, c byte) (int, bool) {
	j := p + 1
	negate := j < len(pattern) && pattern[j] == '^'
	if negate {
		j++
	}
	matched := false
	for j < len(pattern) && pattern[j] != ']' {
		switch {
		case pattern[j] == '\\' && j+1 < len(pattern):
			j++
			if pattern[j] == c {
				matched = true
			}
			j++
		case j+2 < len(pattern) && pattern[j+1] == '-':
			// As in Redis, a range's end may be ']' ("[a-]" is ']'..'a'):
			// the class goes on after it.
			lo, hi := pattern[j], pattern[j+2]
			if lo > hi {
				lo, hi = hi, lo
			}
			if c >= lo && c <= hi {
				matched = true
			}
			j += 3
		default:
			if pattern[j] == c {
				matched = true
			}
			j++
		}
	}
	if j < len(pattern) {
		j++ // the closing ']'
	}
	return j - p, matched != negate
}

// Escape quotes the glob metacharacters of s, so a pattern of it matches
// s alone (a literal prefix before a '*').
func Escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

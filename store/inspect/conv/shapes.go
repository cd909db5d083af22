package conv

import "strings"

// Shapes of values other libraries write.

// isAlnum reports whether s is only ASCII letters and digits.
func isAlnum(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return s != ""
}

// isHex reports whether s is only lower-case hex digits.
func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return s != ""
}

// isBase64 reports whether s is standard base64 of n bytes (padded).
func isBase64(s string, n int) bool {
	want := (n + 2) / 3 * 4
	if len(s) != want {
		return false
	}
	pad := (3 - n%3) % 3
	for i := 0; i < len(s); i++ {
		c := s[i]
		if i >= len(s)-pad {
			if c != '=' {
				return false
			}
			continue
		}
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '/') {
			return false
		}
	}
	return true
}

// isDigits reports whether s is one or more ASCII digits.
func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// cutLast cuts s around its last sep.
func cutLast(s string, sep byte) (before, after string, ok bool) {
	i := strings.LastIndexByte(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+1:], true
}

package glob

import (
	"strings"
	"testing"
)

func TestGlobMatchRedisRules(t *testing.T) {
	cases := []struct {
		p, s string
		want bool
	}{
		{"*", "", true},
		{"*", "anything", true},
		{"a*", "abc", true},
		{"a*", "ba", false},
		{"*c", "abc", true},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"a[bx]c", "axc", true},
		{"a[^bx]c", "axc", false},
		{"a[^bx]c", "ayc", true},
		{"[a-c]z", "bz", true},
		{"[c-a]z", "bz", true},
		{"[a-c]z", "dz", false},
		{"[a-]", "^", true}, // a range up to ']', and the class goes on
		{"[a-]", "-", false},
		{"[a-]x", "x", true},
		{`a\*b`, "a*b", true},
		{`a\*b`, "axb", false},
		{"orders:*:x", "orders:1:2:x", true},
		{"*a*a*a*a*a*b", strings.Repeat("a", 200), false},
	}
	for _, c := range cases {
		if got := Match(c.p, c.s); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.p, c.s, got, c.want)
		}
	}
}

// An escaped string is a literal: metacharacters in a name stand for
// themselves, so the name (and, with a '*' after it, what it starts) is
// all its pattern matches.
func TestEscapeIsLiteral(t *testing.T) {
	for _, s := range []string{`{a}:value:`, `x*y?[z]\`, `[^a-z]`, ``} {
		p := Escape(s)
		if !Match(p, s) || !Match(p+"*", s+"tail") {
			t.Errorf("Escape(%q) = %q does not match its own string", s, p)
		}
		if s != "" && (Match(p, s+"x") || Match(p+"*", "other")) {
			t.Errorf("Escape(%q) = %q matches more than the literal", s, p)
		}
	}
	if Match(Escape("a*"), "abc") || Match(Escape("a?c"), "abc") || Match(Escape("[ab]"), "a") {
		t.Error("an escaped metacharacter still matches as one")
	}
}

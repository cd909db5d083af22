package glob

import (
	"strings"
	"testing"
)

// Any pattern a request (?match=) or a configuration brings, against any
// name: nothing panics, the compiled automaton answers what Match answers,
// and an escaped name matches itself alone (with a '*' after it, what
// starts with it).
func FuzzGlob(f *testing.F) {
	for _, seed := range [][2]string{
		{"*", ""}, {"a*", "abc"}, {"*c", "abc"}, {"a?c", "abc"}, {"a[bx]c", "axc"}, {"a[^bx]c", "ayc"},
		{"[a-c]z", "bz"}, {"[c-a]z", "bz"}, {`a\*b`, "a*b"}, {`a\`, `a\`}, {"[", "["}, {"[^", "x"},
		{"[a-", "b"}, {"[a-]x", "-"}, {`[\]]`, "]"}, {`[\`, `\`}, {"orders:*:x", "orders:1:2:x"},
		{"*a*a*a*a*a*b", strings.Repeat("a", 60)}, {"[]", "]"}, {"[\xff-\x00]", "\x80"},
		{strings.Repeat("?", MaxLen), strings.Repeat("x", MaxLen)},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, pattern, s string) {
		want := Match(pattern, s)
		g, err := Compile(pattern)
		if len(pattern) > MaxLen {
			if err == nil {
				t.Fatalf("Compile took a pattern of %d bytes", len(pattern))
			}
		} else if err != nil {
			t.Fatalf("Compile(%q): %v", pattern, err)
		} else if got := g.Match(s); got != want {
			t.Fatalf("Compile(%q).Match(%q) = %v, Match = %v", pattern, s, got, want)
		}

		lit := Escape(pattern)
		if !Match(lit, pattern) || Match(lit, s) != (s == pattern) {
			t.Fatalf("Escape(%q) = %q: matches %q: %v", pattern, lit, s, Match(lit, s))
		}
		if Match(lit+"*", s) != strings.HasPrefix(s, pattern) {
			t.Fatalf("Escape(%q)+\"*\" matches %q: %v, want %v", pattern, s, !strings.HasPrefix(s, pattern), strings.HasPrefix(s, pattern))
		}
		if len(lit)+1 <= MaxLen {
			if g, err := Compile(lit + "*"); err != nil || g.Match(s) != strings.HasPrefix(s, pattern) {
				t.Fatalf("Compile(Escape(%q)+\"*\") = %v; matches %q wrongly", pattern, err, s)
			}
		}
	})
}

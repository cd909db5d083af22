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

package glob

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// The compiled glob answers exactly as Match does, over patterns and
// names drawn from a small alphabet so that classes, escapes and stars
// meet matching and non-matching bytes often.
func TestCompiledGlobAgreesWithGlobMatch(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const patAlpha = `ab*?[]^-\c`
	const nameAlpha = `abc-*[\`
	for range 20000 {
		p := make([]byte, r.IntN(12))
		for i := range p {
			p[i] = patAlpha[r.IntN(len(patAlpha))]
		}
		g, err := Compile(string(p))
		if err != nil {
			t.Fatal(err)
		}
		for range 5 {
			s := make([]byte, r.IntN(10))
			for i := range s {
				s[i] = nameAlpha[r.IntN(len(nameAlpha))]
			}
			if got, want := g.Match(string(s)), Match(string(p), string(s)); got != want {
				t.Fatalf("Glob(%q).Match(%q) = %v, Match says %v", p, s, got, want)
			}
		}
	}
}

func TestCompiledGlobRedisRules(t *testing.T) {
	for _, c := range []struct {
		p, s string
		want bool
	}{
		{"", "", true}, {"", "a", false}, {"abc", "abc", true}, {"ab*", "abc", true}, {"ab*", "b", false},
		{"*", "", true}, {"a*c", "abbbc", true}, {"a[^b]?", "acd", true}, {`x\`, `x\`, true},
		{strings.Repeat("*a", 100) + "b", strings.Repeat("a", 5000), false},
		{strings.Repeat("?", 200), strings.Repeat("é", 100), true},
	} {
		g, err := Compile(c.p)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.Match(c.s); got != c.want {
			t.Errorf("Glob(%q).Match(%q) = %v, want %v", c.p, c.s, got, c.want)
		}
	}
}

func TestCompileGlobRefusesLongPatterns(t *testing.T) {
	if _, err := Compile(strings.Repeat("*a", MaxLen/2)); err != nil {
		t.Fatalf("a pattern of MaxLen bytes: %v", err)
	}
	_, err := Compile(strings.Repeat("*a", 500))
	if !errors.Is(err, ErrTooLong) {
		t.Fatalf("a 1000-byte pattern: err = %v, want ErrTooLong", err)
	}
}

// A hostile filter: a star before a long run no name ends with. Match
// retries the run from every byte of the name; the compiled glob reads
// each byte once.
var hostileGlob = "*" + strings.Repeat("a", MaxLen-2) + "b"

func BenchmarkGlobHostileBacktracking(b *testing.B) {
	name := strings.Repeat("a", 1024)
	for b.Loop() {
		Match(hostileGlob, name)
	}
}

func BenchmarkGlobHostileCompiled(b *testing.B) {
	name := strings.Repeat("a", 1024)
	g, err := Compile(hostileGlob)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		g.Match(name)
	}
}

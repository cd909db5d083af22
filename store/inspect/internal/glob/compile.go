package glob

import (
	"errors"
	"fmt"
	"strings"
)

// MaxLen bounds a pattern that arrives with a request (?match=): past
// it Compile refuses, so one request cannot buy an expensive filter.
const MaxLen = 256

// ErrTooLong is returned by Compile for a pattern over MaxLen
// bytes.
var ErrTooLong = errors.New("inspect: glob pattern too long")

// Glob is a compiled pattern with Match's rules whose Match costs
// O(len(s)) whatever the pattern holds: the pattern is run as a
// bit-parallel automaton (one bit per single-byte token matched so far,
// the "shift-and" method), so a pattern full of '*' cannot make it
// backtrack. Compile once per request and match every name with it.
type Glob struct {
	pattern string
	// prefix is set when the pattern is a literal followed by one '*',
	// the common case, matched with strings.HasPrefix.
	prefix, literal bool
	lit             string
	// Automaton: state i is "the first i tokens matched"; words per state
	// set, mask[c*words:] the states a byte c may enter, loop the states
	// followed by a '*'.
	n     int
	words int
	mask  []uint64
	loop  []uint64
}

// Compile compiles pattern (Match's rules); a pattern longer than
// MaxLen is refused with ErrTooLong.
func Compile(pattern string) (*Glob, error) {
	if len(pattern) > MaxLen {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrTooLong, len(pattern), MaxLen)
	}
	g := &Glob{pattern: pattern}
	if !strings.ContainsAny(pattern, `*?[\`) {
		g.literal, g.lit = true, pattern
		return g, nil
	}
	if body, ok := strings.CutSuffix(pattern, "*"); ok && !strings.ContainsAny(body, `*?[\`) {
		g.prefix, g.lit = true, body
		return g, nil
	}
	// First pass counts the tokens, second fills the masks: a token's
	// byte set is what globToken says, so the rules are written once.
	type tok struct{ p, n int }
	var toks []tok
	var stars []int // token count at each '*'
	for p := 0; p < len(pattern); {
		if pattern[p] == '*' {
			stars = append(stars, len(toks))
			p++
			continue
		}
		n, _ := globToken(pattern, p, 0)
		toks = append(toks, tok{p, n})
		p += n
	}
	g.n = len(toks)
	g.words = (g.n + 1 + 63) / 64
	g.mask = make([]uint64, 256*g.words)
	g.loop = make([]uint64, g.words)
	for _, s := range stars {
		g.loop[s/64] |= 1 << (s % 64)
	}
	for i, t := range toks {
		st := i + 1
		for c := range 256 {
			if _, ok := globToken(pattern, t.p, byte(c)); ok {
				g.mask[c*g.words+st/64] |= 1 << (st % 64)
			}
		}
	}
	return g, nil
}

// String is the pattern.
func (g *Glob) String() string { return g.pattern }

// Match reports whether s matches, as Match(g.String(), s) would.
func (g *Glob) Match(s string) bool {
	switch {
	case g.literal:
		return s == g.lit
	case g.prefix:
		return strings.HasPrefix(s, g.lit)
	}
	var small [(MaxLen + 1 + 63) / 64]uint64 // every compiled state set fits
	d := small[:g.words]
	d[0] = 1
	for i := 0; i < len(s); i++ {
		m := g.mask[int(s[i])*g.words:]
		var carry, any uint64
		for w := range d {
			v := d[w]
			shifted := v<<1 | carry
			carry = v >> 63
			d[w] = shifted&m[w] | v&g.loop[w]
			any |= d[w]
		}
		if any == 0 {
			return false
		}
	}
	return d[g.n/64]&(1<<(g.n%64)) != 0
}

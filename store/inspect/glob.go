package inspect

import "github.com/lockwarden/lockwarden/store/inspect/internal/glob"

// Patterns (the console's --match and ?match=, the configured patterns of
// string kinds and families) follow Redis's glob rules; internal/glob
// matches them.

// GlobMatch reports whether s matches pattern with Redis's glob rules (the
// ones SCAN MATCH and KEYS use): '*' any run of bytes, '?' one byte,
// "[abc]", "[^a-z]" classes, '\' escapes, on bytes.
func GlobMatch(pattern, s string) bool { return glob.Match(pattern, s) }

// MaxGlobLen bounds a pattern that arrives with a request (?match=): past
// it CompileGlob refuses, so one request cannot buy an expensive filter.
const MaxGlobLen = glob.MaxLen

// ErrGlobTooLong is returned by CompileGlob for a pattern over MaxGlobLen
// bytes.
var ErrGlobTooLong = glob.ErrTooLong

// Glob is a compiled pattern with GlobMatch's rules whose Match costs
// O(len(s)) whatever the pattern holds, so a pattern full of '*' cannot
// make it backtrack. Compile once per request and match every name with
// it.
type Glob struct{ g *glob.Glob }

// CompileGlob compiles pattern (GlobMatch's rules); a pattern longer than
// MaxGlobLen is refused with ErrGlobTooLong.
func CompileGlob(pattern string) (*Glob, error) {
	g, err := glob.Compile(pattern)
	if err != nil {
		return nil, err
	}
	return &Glob{g}, nil
}

// String is the pattern.
func (g *Glob) String() string { return g.g.String() }

// Match reports whether s matches, as GlobMatch(g.String(), s) would.
func (g *Glob) Match(s string) bool { return g.g.Match(s) }

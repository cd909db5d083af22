package inspect

import (
	"slices"
	"testing"

	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// GlobMatch selects what Redis's own KEYS selects, for every pattern of up
// to four bytes over the bytes that mean something in a pattern, against
// every name of up to two bytes (a range's end may be ']', as in "[a-]"): Redis is the reference, on a server of
// the test's own holding exactly those names. Discovery filters names it
// did not SCAN (announced, notified) with GlobMatch, so the two must agree.
func TestGlobMatchAgreesWithRedisKeys(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redistest.StartT(t).Addr})
	t.Cleanup(func() { rdb.Close() })
	ctx := t.Context()

	const nameBytes = "ab-]^\\x\x80\xff"
	var names []string
	for i := range len(nameBytes) {
		names = append(names, nameBytes[i:i+1])
		for j := range len(nameBytes) {
			names = append(names, nameBytes[i:i+1]+nameBytes[j:j+1])
		}
	}
	pipe := rdb.Pipeline()
	for _, n := range names {
		pipe.Set(ctx, n, 1, 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}

	// No byte >= 0x80 in patterns: Redis compares a range's bounds as C
	// chars, signed on x86 builds and unsigned on ARM, so a range over
	// them selects differently from one build to the next (GlobMatch goes
	// by byte order). Names hold such bytes, for '?', '*' and "[^...]".
	const patternBytes = "a-][^\\*?"
	patterns := []string{""}
	for l := 1; l <= 4; l++ {
		for _, p := range patterns {
			if len(p) == l-1 {
				for i := range len(patternBytes) {
					patterns = append(patterns, p+patternBytes[i:i+1])
				}
			}
		}
	}
	mismatches := 0
	for start := 0; start < len(patterns); start += 1000 {
		batch := patterns[start:min(len(patterns), start+1000)]
		pipe := rdb.Pipeline()
		cmds := make([]*redis.StringSliceCmd, len(batch))
		for i, p := range batch {
			cmds[i] = pipe.Keys(ctx, p)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		for i, p := range batch {
			want := cmds[i].Val()
			slices.Sort(want)
			var got []string
			for _, n := range names {
				if GlobMatch(p, n) {
					got = append(got, n)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, want) && mismatches < 10 {
				mismatches++
				t.Errorf("pattern %q: GlobMatch selects %q, Redis KEYS %q", p, got, want)
			}
		}
	}
}

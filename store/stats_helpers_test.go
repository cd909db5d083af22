package store

import (
	"strconv"
	"testing"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// statCounts are the outcomes a stats ring recorded.
type statCounts struct {
	Acquired, Rejected, Errors int64
}

// statsRecentSum adds up every counter in name's stats ring. Tests use a
// fresh name each, so the whole ring is the test's own outcomes; the
// console's windowed reading of it is tested in store/inspect.
func statsRecentSum(t *testing.T, rdb *redis.Client, name string) statCounts {
	t.Helper()
	fields, err := rdb.HGetAll(t.Context(), wire.StatsKey(name)).Result()
	if err != nil {
		t.Fatal(err)
	}
	var sum statCounts
	for k, v := range fields {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || len(k) < 2 {
			t.Fatalf("stats field %q = %q: not <outcome><bucket> = count", k, v)
		}
		switch k[0] {
		case 'a':
			sum.Acquired += n
		case 'r':
			sum.Rejected += n
		case 'e':
			sum.Errors += n
		default:
			t.Fatalf("stats field %q: unknown outcome", k)
		}
	}
	return sum
}

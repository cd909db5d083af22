package inspect

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect/internal/nodes"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// testPair is an application's client and the console over the same
// Redis, so a test can take an object with one and look at it with the
// other. Selectors both have (Redis) must be spelled out.
type testPair struct {
	*store.Client
	*Inspector
}

// newPair is an application on rdb and a console on the client serve
// would give it (redistest.UniversalFor: a ClusterClient on the shared
// Cluster).
func newPair(t testing.TB, rdb *redis.Client) testPair {
	return testPair{store.New(rdb, nil), New(redistest.UniversalFor(t, rdb), nil)}
}

func lockTestClient(t *testing.T) (testPair, *redis.Client) {
	t.Helper()
	rdb := redistest.Client(t)
	return newPair(t, rdb), rdb
}

func tbNewBucket(t *testing.T) (testPair, *redis.Client, string) {
	t.Helper()
	rdb := redistest.Client(t)
	return newPair(t, rdb), rdb, redistest.Prefix(t) + "ratelimit:b"
}

func queueLen(rdb *redis.Client, name string) int64 {
	return rdb.LLen(context.Background(), wire.FairLockQueueKey(name)).Val()
}

func rwLevelTTL(t *testing.T, rdb *redis.Client, name, holder string, level int64) time.Duration {
	t.Helper()
	return rdb.PTTL(context.Background(), wire.RWReadLevelKey(name, holder, level)).Val()
}

// listed is what discover found.
type listed struct {
	Locks    []LockInfo    // sorted by name
	Limiters []LimiterInfo // sorted by name
}

// discover reads and classifies the keys matching match ("" means every
// key) on every node as a full pass of package walk does (SCAN, then
// Candidates and ReadSides), without its batching, sizing and memory: the
// kinds' tests look at classification and side reads, walk's tests at the
// pass.
func discover(ctx context.Context, c *Inspector, match string) (*listed, error) {
	if match == "" {
		match = "*"
	}
	p := c.ObjectPatterns()
	var mu sync.Mutex
	out := &listed{}
	err := c.ForEachNode(ctx, func(ctx context.Context, node *redis.Client) error {
		var hashes, strs []string
		for iter := node.ScanType(ctx, 0, match, 1000, "hash").Iterator(); iter.Next(ctx); {
			hashes = append(hashes, iter.Val())
		}
		if p.ListsStrings() {
			for iter := node.ScanType(ctx, 0, match, 1000, "string").Iterator(); iter.Next(ctx); {
				if p.ListsString(iter.Val()) {
					strs = append(strs, iter.Val())
				}
			}
		}
		pipe := node.Pipeline()
		now := pipe.Time(ctx)
		read := p.QueueCandidates(ctx, pipe, hashes, strs)
		if err := nodes.Exec(ctx, pipe); err != nil {
			return err
		}
		if err := now.Err(); err != nil {
			return err
		}
		nowMS := now.Val().UnixMilli()
		locks, lims, _ := read.Classify(nowMS)
		if err := c.ReadSides(ctx, node, locks, lims, nowMS); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		out.Locks, out.Limiters = append(out.Locks, locks...), append(out.Limiters, lims...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out.Locks, func(a, b LockInfo) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(out.Limiters, func(a, b LimiterInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// readRegistry reads the client registry as a tick asked for it does
// (SampleOptions.Clients).
func readRegistry(ctx context.Context, c *Inspector) (*Registry, error) {
	s, seen, err := c.SampleWith(ctx, nil, nil, SampleOptions{Clients: true})
	if err != nil {
		return nil, err
	}
	if s.Registry == nil {
		return nil, fmt.Errorf("the registry was not read (too large: %v)", seen.RegistryTooLarge)
	}
	return s.Registry, nil
}

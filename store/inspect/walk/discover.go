package walk

import (
	"context"
	"sort"
	"sync"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/inspect/internal/nodes"

	"github.com/redis/go-redis/v9"
)

// Discovery walks the keyspace with SCAN (never KEYS, never a script that
// loops over keys), reads candidate keys in pipelined batches and keeps
// what classifies. Cost per pass:
//
//   - SCAN MATCH <match> COUNT scanCount, on every master;
//   - per batch of up to readBatch keys, one pipeline of TYPE;
//   - for the hashes among them, one pipeline of HLEN;
//   - for the hashes whose HLEN is between 1 and inspect.MaxHashFields, the
//     sorted sets, and the strings a pattern or a framework convention
//     claims (inspect.ObjectPatterns.ReadsString), one pipeline of TIME
//     plus HGETALL and PTTL (hashes), a bounded ZRANGE, ZCARD and PTTL
//     (sorted sets), STRLEN, a bounded GETRANGE and PTTL (strings);
//   - for what classified as a lock or a Redisson limiter, one pipeline of
//     side reads (fair queue, fencing token, read-level leases, limiter
//     window; inspect.Inspector.ReadSides).
//
// The HLEN pass is what keeps a pass cheap next to large application hashes:
// no known layout has more than inspect.MaxHashFields fields, so a hash with a
// million fields costs one O(1) HLEN and is never transferred. TIME is read
// in every read pipeline, from the node holding those keys, because that
// node's clock is the one its scripts used to write last_mill_second.

// MaxDiscovered bounds each list Discover returns.
const MaxDiscovered = 10000

const (
	scanCount = 1000 // SCAN COUNT hint: keys examined per SCAN call
	readBatch = 500  // keys per pipeline
)

// Discovered is what one discovery pass found.
type Discovered struct {
	Locks    []inspect.LockInfo    // sorted by name
	Limiters []inspect.LimiterInfo // sorted by name
	// LocksTruncated and LimitersTruncated say the pass found more than
	// MaxDiscovered of that kind and the list holds only the first ones
	// SCAN returned.
	LocksTruncated    bool
	LimitersTruncated bool
	// Skipped counts hashes that matched but were not read because they have
	// more fields than any known layout (application data).
	Skipped int
}

// Discover is one full pass through src, remembering nothing of earlier
// ones: it SCANs for hashes matching match ("" means "*") on every master
// and classifies them, and the strings too when patterns list string
// kinds. ctx bounds the whole pass; a very large keyspace should be
// narrowed with match rather than waited for. A console runs its passes
// through its Walker (Walker.Discover).
func Discover(ctx context.Context, src Source, match string) (*Discovered, error) {
	return discover(ctx, src, match, &fullRejects{})
}

// Discover is a full pass over the walker's keys that skips, for a few
// passes, the hashes earlier ones found to be no object (rejects.go). A
// walk that has not ticked yet starts its own memory from it, so its first
// pass does not repeat the full pass's reads.
func (w *Walker) Discover(ctx context.Context) (*Discovered, error) {
	d, err := discover(ctx, w.src, w.match, w.full)
	if err == nil && w.ticks == 0 {
		w.rejects = w.full.clone()
	}
	return d, err
}

func discover(ctx context.Context, src Source, match string, rejects *fullRejects) (*Discovered, error) {
	if match == "" {
		match = "*"
	}
	d := &discovery{src: src, seen: map[string]struct{}{}, patterns: src.ObjectPatterns(), rejects: rejects}
	d.pass = rejects.begin()
	err := src.ForEachNode(ctx, func(ctx context.Context, node *redis.Client) error {
		return d.scanNode(ctx, node, match)
	})
	if err != nil {
		return nil, err
	}
	rejects.end(d.pass)
	out := d.out
	sort.Slice(out.Locks, func(i, j int) bool { return out.Locks[i].Name < out.Locks[j].Name })
	sort.Slice(out.Limiters, func(i, j int) bool { return out.Limiters[i].Name < out.Limiters[j].Name })
	return &out, nil
}

// discovery collects results from nodes that may be scanned concurrently.
type discovery struct {
	src      Source
	patterns inspect.ObjectPatterns
	rejects  *fullRejects
	pass     int64 // the pass's number among full passes (fullRejects)

	mu   sync.Mutex
	out  Discovered
	seen map[string]struct{} // SCAN may return a key twice while rehashing
}

// done reports that both lists overflowed, so scanning further cannot
// change the result.
func (d *discovery) done() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.out.LocksTruncated && d.out.LimitersTruncated
}

func (d *discovery) scanNode(ctx context.Context, node redis.Cmdable, match string) error {
	var cursor uint64
	for {
		keys, next, err := node.Scan(ctx, cursor, match, scanCount).Result()
		if err != nil {
			return err
		}
		batch := d.rejects.keep(keys, d.pass)
		for len(batch) > 0 {
			n := min(len(batch), readBatch)
			if err := d.readBatch(ctx, node, batch[:n]); err != nil {
				return err
			}
			batch = batch[n:]
		}
		if next == 0 || d.done() {
			return nil
		}
		cursor = next
	}
}

// readBatch types keys, sizes the hashes with HLEN, then reads and
// classifies the small ones, the sorted sets and the claimed strings.
func (d *discovery) readBatch(ctx context.Context, node redis.Cmdable, keys []string) error {
	pipe := node.Pipeline()
	types := make([]*redis.StatusCmd, len(keys))
	for i, k := range keys {
		types[i] = pipe.Type(ctx, k)
	}
	if err := nodes.Exec(ctx, pipe); err != nil {
		return err
	}
	var hashes, others []string
	var cands inspect.CandidateKeys
	for i, k := range keys {
		switch t := types[i].Val(); {
		case t == "hash":
			hashes = append(hashes, k)
		case t == "zset":
			cands.Zsets = append(cands.Zsets, k)
		case t == "string" && d.patterns.ReadsString(k):
			cands.Strings = append(cands.Strings, k)
		case t != "none":
			others = append(others, k)
		}
	}
	d.reject(others, 0)

	pipe = node.Pipeline()
	lens := make([]*redis.IntCmd, len(hashes))
	for i, k := range hashes {
		lens[i] = pipe.HLen(ctx, k)
	}
	if len(hashes) > 0 {
		if err := nodes.Exec(ctx, pipe); err != nil {
			return err
		}
	}
	var large []string
	cands.Hashes, large = smallHashes(hashes, lens)
	d.reject(large, len(large))
	if len(cands.Hashes)+len(cands.Zsets)+len(cands.Strings) == 0 {
		return nil
	}

	pipe = node.Pipeline()
	now := pipe.Time(ctx)
	read := d.patterns.QueueCandidateKeys(ctx, pipe, cands)
	if err := nodes.Exec(ctx, pipe); err != nil {
		return err
	}
	if err := now.Err(); err != nil {
		return err
	}
	nowMS := now.Val().UnixMilli()

	locks, lims, none := read.Classify(nowMS)
	d.reject(none, 0)
	if err := d.src.ReadSides(ctx, node, locks, lims, nowMS); err != nil {
		return err
	}
	d.add(locks, lims)
	return nil
}

// smallHashes keeps the keys whose HLEN says they may be an object: at
// least one field (not vanished or retyped since SCAN) and no more than any
// known layout has; large are the larger ones.
func smallHashes(keys []string, lens []*redis.IntCmd) (small, large []string) {
	for i, k := range keys {
		switch n, err := lens[i].Result(); {
		case err != nil || n == 0:
		case n > inspect.MaxHashFields:
			large = append(large, k)
		default:
			small = append(small, k)
		}
	}
	return small, large
}

// reject records hashes found to be no object, skipped of them too large
// to read.
func (d *discovery) reject(names []string, skipped int) {
	if len(names) == 0 {
		return
	}
	d.rejects.add(names, d.pass)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.out.Skipped += skipped
}

// add records what one batch found, once per name.
func (d *discovery) add(locks []inspect.LockInfo, lims []inspect.LimiterInfo) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, l := range locks {
		if _, dup := d.seen[l.Name]; dup {
			continue
		}
		d.seen[l.Name] = struct{}{}
		if len(d.out.Locks) < MaxDiscovered {
			d.out.Locks = append(d.out.Locks, l)
		} else {
			d.out.LocksTruncated = true
		}
	}
	for _, l := range lims {
		if _, dup := d.seen[l.Name]; dup {
			continue
		}
		d.seen[l.Name] = struct{}{}
		if len(d.out.Limiters) < MaxDiscovered {
			d.out.Limiters = append(d.out.Limiters, l)
		} else {
			d.out.LimitersTruncated = true
		}
	}
}

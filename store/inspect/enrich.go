package inspect

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect/internal/nodes"

	"github.com/lockwarden/lockwarden/luascripts"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Several kinds are one hash plus side keys: Redisson's fair lock (queue and
// timeouts), fenced lock (token counter), read-write lock (a lease key per
// read level) and rate limiter (value and grants). Classification decides
// the family from the hash alone; these reads, queued on the same pipeline
// machinery, add the side keys' state. Every side key is in the slot of the
// object's name, so on a Cluster they go to the node that holds the name.

// redissonLimiterStateScript reads a limiter window without moving it. It runs in
// every sampler pipeline, so it goes as EVALSHA: sending the text with EVAL
// made Redis hash ~2 KB per limiter per tick (about 5 % of a core at 1,000
// limiters). A pipeline cannot fall back from NOSCRIPT the way Script.Run
// does, so callers check noScript afterwards, load and read once more.
var redissonLimiterStateScript = redis.NewScript(luascripts.Source("redisson_limiter_state"))

// noScript reports whether any of cmds failed because Redis does not have
// the script (restarted, SCRIPT FLUSH, a new Cluster node).
func noScript(cmds []*redis.Cmd) bool {
	for _, c := range cmds {
		if c != nil && c.Err() != nil && redis.HasErrorPrefix(c.Err(), "NOSCRIPT") {
			return true
		}
	}
	return false
}

// loadStateScript caches the window script on every node (ClusterClient
// broadcasts SCRIPT LOAD to all masters).
func (c *Inspector) loadStateScript(ctx context.Context) error {
	return redissonLimiterStateScript.Load(ctx, c.rdb).Err()
}

// maxGrantsDecoded bounds the sliding-window grants one state read decodes.
const maxGrantsDecoded = 10000

// lockSides are the pending side reads of one hash lock.
type lockSides struct {
	queue    *redis.StringSliceCmd
	qlen     *redis.IntCmd
	timeouts *redis.ZSliceCmd
	token    *redis.StringCmd
	leases   []*redis.DurationCmd // rwlock: one per holder, nil for writers
	held     *redis.MapStringStringCmd
	store    storeQueue                // store's hand-off queue (waiters.go)
	poll     *redis.MapStringStringCmd // poll waiters (pollwaiters.go)
}

// queueLockSides queues the side reads info's family needs.
func queueLockSides(ctx context.Context, pipe redis.Pipeliner, info *LockInfo) *lockSides {
	s := &lockSides{}
	switch info.Kind {
	case KindReentrant, KindFairLock, KindFencedLock:
		return queueRLockSides(ctx, pipe, info.Name)
	case KindRWLock, KindTokenLock:
		// Hold times: a field per read or write holder, or the token.
		s.held = queueHoldTimes(ctx, pipe, info.Name)
		s.poll = queuePollWaiters(ctx, pipe, info.Name)
		if info.Kind == KindTokenLock {
			break
		}
		s.leases = make([]*redis.DurationCmd, len(info.Holders))
		for i, h := range info.Holders {
			if h.Mode == wire.RWModeRead {
				// The newest level was leased last; the watchdog renews all.
				s.leases[i] = pipe.PTTL(ctx, wire.RWReadLevelKey(info.Name, h.ID, h.Count))
			}
		}
	}
	return s
}

// queueRLockSides queues the side reads of the RLock family (fair queue,
// fencing token) by name alone, so Sample can send them with the hash read.
func queueRLockSides(ctx context.Context, pipe redis.Pipeliner, name string) *lockSides {
	return &lockSides{
		queue:    pipe.LRange(ctx, wire.FairLockQueueKey(name), 0, MaxWaitersShown-1),
		qlen:     pipe.LLen(ctx, wire.FairLockQueueKey(name)),
		timeouts: pipe.ZRangeWithScores(ctx, wire.FairLockTimeoutKey(name), 0, MaxWaitersShown-1),
		token:    pipe.Get(ctx, wire.FencingTokenKey(name)),
		held:     queueHoldTimes(ctx, pipe, name),
		store:    queueStoreWaiters(ctx, pipe, name),
		poll:     queuePollWaiters(ctx, pipe, name),
	}
}

// apply refines info with what the side reads returned. A fenced lock's
// token survives releases, so its presence marks the lock as fenced; a
// queue marks it as fair (Redisson deletes an empty queue, so a fair lock
// nobody waits for reads as a plain reentrant lock, which it behaves as).
func (s *lockSides) apply(info *LockInfo, nowMS int64) {
	if s == nil { // a light read (sidekeys.go): no side state to add
		return
	}
	rlock := info.Kind == KindReentrant || info.Kind == KindFairLock || info.Kind == KindFencedLock
	if s.token != nil && rlock {
		if v, err := s.token.Result(); err == nil {
			if n, ok := parseCanonicalInt(v); ok {
				info.Kind, info.FencingToken = KindFencedLock, n
			}
		}
	}
	if s.qlen != nil && rlock && s.qlen.Err() == nil && s.qlen.Val() > 0 && s.queue.Err() == nil {
		deadlines := map[string]float64{}
		for _, z := range s.timeouts.Val() { // a wrong type leaves this empty
			if m, ok := z.Member.(string); ok {
				deadlines[m] = z.Score
			}
		}
		info.Kind = KindFairLock
		info.WaitersTotal = s.qlen.Val()
		info.Waiters = make([]Waiter, 0, len(s.queue.Val()))
		for _, id := range s.queue.Val() {
			w := Waiter{ID: id, Owner: id, Position: len(info.Waiters) + 1, Channel: info.Channel + ":" + id}
			if d, ok := deadlines[id]; ok {
				w.Deadline, w.DeadlineMS = time.UnixMilli(int64(d)), int64(d)
				w.RemainingMS = int64(d) - nowMS
			}
			info.Waiters = append(info.Waiters, w)
		}
	}
	if rlock {
		s.store.apply(info, nowMS)
	}
	applyPollWaiters(info, s.poll, nowMS)
	applyHoldTimes(info, s.held)
	for i, cmd := range s.leases {
		if cmd != nil && i < len(info.Holders) && cmd.Err() == nil && cmd.Val() > 0 {
			info.Holders[i].LeaseMS = cmd.Val().Milliseconds()
		}
	}
}

// queueLimiterState queues the state read of a Redisson limiter's overall
// window; nil for other kinds and for per-client limiters (one window per
// client: RedissonClients reads those).
func queueLimiterState(ctx context.Context, pipe redis.Pipeliner, info *LimiterInfo) *redis.Cmd {
	if info.Kind != KindRedissonLimiter || info.PerClient {
		return nil
	}
	return queueWindowState(ctx, pipe, info.Name, "")
}

func queueWindowState(ctx context.Context, pipe redis.Pipeliner, name, clientID string) *redis.Cmd {
	return redissonLimiterStateScript.EvalSha(ctx, pipe,
		[]string{name, wire.RedissonValueKey(name, clientID), wire.RedissonPermitsKey(name, clientID)}, maxGrantsDecoded)
}

// windowState is redisson_limiter_state.lua's reply.
type windowState struct {
	found, hasGrants, truncated bool
	value, pttlMS, used         int64
	oldestMS, nowMS             int64
}

func readWindowState(cmd *redis.Cmd) (windowState, bool) {
	if cmd == nil {
		return windowState{}, false
	}
	v, err := cmd.Int64Slice()
	if err != nil || len(v) != 8 || v[0] != 1 {
		return windowState{}, false
	}
	return windowState{found: true, value: v[1], pttlMS: v[2], hasGrants: v[3] == 1, used: v[4],
		oldestMS: v[5], nowMS: v[6], truncated: v[7] == 1}, true
}

// algorithmOf infers the Redisson version's algorithm from the state it
// left: a grants zset, a keepAliveTime field (3.35+), or a value without
// expiry are the sliding window's; a value with an expiry and no grants is
// the fixed window's; no state at all says nothing.
func algorithmOf(ws windowState, keepAliveMS int64) string {
	switch {
	case ws.hasGrants || keepAliveMS > 0:
		return AlgorithmSlidingWindow
	case ws.value >= 0 && ws.pttlMS == -1:
		return AlgorithmSlidingWindow
	case ws.value >= 0:
		return AlgorithmFixedWindow
	}
	return ""
}

// applyWindow fills a limiter (or one client) from its window state.
func applyWindow(info *LimiterInfo, ws windowState) {
	info.Algorithm = algorithmOf(ws, info.KeepAliveMS)
	info.AvailableUnknown = false
	info.GrantsKnown = !ws.truncated
	info.ResetIn, info.NextFreeIn = 0, 0
	switch {
	case ws.value < 0: // nobody acquired yet (or the window expired): full
		info.Available, info.Grants = info.Rate, 0
	case info.Algorithm == AlgorithmFixedWindow:
		info.Available = ws.value
		info.Grants = max(0, info.Rate-ws.value)
		info.ResetIn = time.Duration(max(0, ws.pttlMS)) * time.Millisecond
	default:
		info.Available = ws.value
		info.Grants = ws.used
		if ws.oldestMS > 0 {
			// When the oldest grant in the window returns to the value.
			info.NextFreeIn = time.Duration(max(0, ws.oldestMS+int64(info.IntervalMS)-ws.nowMS)) * time.Millisecond
		}
	}
}

// enrichObjects runs the side reads of locks and limiters that live on one
// node (or any pipeline-capable client) in one round trip, and in a second
// one only when that node had to be given the window script. nowMS is
// Redis time for waiter deadlines.
func enrichObjects(ctx context.Context, node redis.Cmdable, locks []LockInfo, lims []LimiterInfo, nowMS int64) error {
	for attempt := 0; ; attempt++ {
		pipe := node.Pipeline()
		sides := make([]*lockSides, len(locks))
		for i := range locks {
			sides[i] = queueLockSides(ctx, pipe, &locks[i])
		}
		states := make([]*redis.Cmd, len(lims))
		for i := range lims {
			states[i] = queueLimiterState(ctx, pipe, &lims[i])
		}
		if pipe.Len() == 0 {
			return nil
		}
		if err := nodes.Exec(ctx, pipe); err != nil {
			return err
		}
		if attempt == 0 && noScript(states) {
			if err := redissonLimiterStateScript.Load(ctx, node).Err(); err != nil {
				return err
			}
			continue
		}
		for i := range locks {
			sides[i].apply(&locks[i], nowMS)
		}
		for i := range lims {
			applyWindowCmd(&lims[i], states[i])
		}
		return nil
	}
}

// applyWindowCmd applies a queued window read to a Redisson limiter with
// one overall window; other kinds are left as they are.
func applyWindowCmd(info *LimiterInfo, cmd *redis.Cmd) {
	if info.Kind != KindRedissonLimiter || info.PerClient {
		return
	}
	if ws, ok := readWindowState(cmd); ok {
		applyWindow(info, ws)
	}
}

// RedissonClients lists the per-client windows of a per-client (type 1)
// Redisson limiter, at most MaxClientsShown, sorted by client id. The keys
// are found by SCAN (MATCH on the limiter's value prefix) on the node that
// holds them.
func (c *Inspector) RedissonClients(ctx context.Context, name string) ([]ClientWindow, error) {
	if err := validateName(name); err != nil {
		return nil, err
	}
	var ids []string
	err := c.redissonClientIDs(ctx, name, func(page []string) error {
		ids = append(ids, page[:min(len(page), MaxClientsShown-len(ids))]...)
		if len(ids) >= MaxClientsShown {
			return errEnoughClients
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnoughClients) {
		return nil, err
	}
	sort.Strings(ids)
	var rateCmd *redis.StringCmd
	var cmds []*redis.Cmd
	for attempt := 0; ; attempt++ {
		pipe := c.rdb.Pipeline()
		rateCmd = pipe.HGet(ctx, name, rlRate)
		cmds = make([]*redis.Cmd, len(ids))
		for i, id := range ids {
			cmds[i] = queueWindowState(ctx, pipe, name, id)
		}
		if err := nodes.Exec(ctx, pipe); err != nil {
			return nil, err
		}
		if attempt > 0 || !noScript(cmds) {
			break
		}
		if err := c.loadStateScript(ctx); err != nil {
			return nil, err
		}
	}
	rate, _ := rateCmd.Int64()
	out := make([]ClientWindow, 0, len(ids))
	for i, id := range ids {
		ws, ok := readWindowState(cmds[i])
		if !ok || ws.value < 0 {
			continue
		}
		cw := ClientWindow{ClientID: id, Available: ws.value, Used: ws.used}
		if !ws.hasGrants && ws.pttlMS > 0 { // a fixed window
			cw.ResetInMS = ws.pttlMS
			cw.Used = max(0, rate-ws.value)
		}
		out = append(out, cw)
	}
	return out, nil
}

// escapeGlob quotes the glob metacharacters of s for SCAN MATCH.
func escapeGlob(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// errEnoughClients stops a client walk early; never returned to callers.
var errEnoughClients = errors.New("inspect: enough clients")

// redissonClientIDs walks the per-client state keys of the Redisson limiter
// at name ("{name}:value:<client-id>") with SCAN on every master and hands
// each page of client ids to page, one page at a time even when a Cluster's
// masters are scanned concurrently (page needs no locking of its own). A
// page holds at most what one SCAN call returns (COUNT scanCount), so a
// caller acting on each page acts in bounded steps; an error from page
// stops the walk and is returned.
func (c *Inspector) redissonClientIDs(ctx context.Context, name string, page func(ids []string) error) error {
	prefix := wire.RedissonValueKey(name, "") + ":"
	var mu sync.Mutex
	return c.forEachNode(ctx, func(ctx context.Context, node *redis.Client) error {
		var cursor uint64
		// Bounded: a pass over a node ends with cursor 0 long before this.
		for round := 0; round < 1_000_000; round++ {
			keys, next, err := node.ScanType(ctx, cursor, escapeGlob(prefix)+"*", scanCount, "string").Result()
			if err != nil {
				return err
			}
			ids := make([]string, 0, len(keys))
			for _, k := range keys {
				if id := strings.TrimPrefix(k, prefix); id != "" {
					ids = append(ids, id)
				}
			}
			if len(ids) > 0 {
				mu.Lock()
				err := page(ids)
				mu.Unlock()
				if err != nil {
					return err
				}
			}
			if next == 0 {
				return nil
			}
			cursor = next
		}
		return nil
	})
}

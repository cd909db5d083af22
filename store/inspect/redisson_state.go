package inspect

import (
	"context"
	"strings"
	"time"

	"github.com/lockwarden/lockwarden/luascripts"
	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect/internal/glob"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Redisson rate limiters' windows. A limiter's state lives beside its
// config hash ({<name>}:value and {<name>}:permits, per client with a
// ":<client-id>" suffix), and the console reads a window as the next
// acquire would see it with redisson_limiter_state.lua: for a sampled
// limiter (sample_kinds.go), GetLimiter, and the clients of a per-client
// limiter, read by its family (package family, through ClientWindowRead).

// redissonLimiterStateScript reads a limiter window without moving it. It runs in
// every sampler pipeline, so it goes as EVALSHA: sending the text with EVAL
// made Redis hash ~2 KB per limiter per tick (about 5 % of a core at 1,000
// limiters). After a NOSCRIPT callers load it once (loadStateScript) and
// read again, rather than send that text once per limiter.
var redissonLimiterStateScript = store.NewScript(luascripts.Source("redisson_limiter_state"))

// noScript reports whether any of cmds failed because Redis does not have
// the script (restarted, SCRIPT FLUSH, a new Cluster node).
func noScript(cmds []*redis.Cmd) bool {
	for _, c := range cmds {
		if c != nil && wire.IsNoScript(c.Err()) {
			return true
		}
	}
	return false
}

// LoadScripts caches the scripts the console's reads send by EVALSHA (the
// window read) on every node (ClusterClient broadcasts SCRIPT LOAD to all
// masters): a read that found Redis without them (NoScript) reads again
// after it.
func (c *Inspector) LoadScripts(ctx context.Context) error {
	return redissonLimiterStateScript.Load(ctx, c.rdb).Err()
}

// maxGrantsDecoded bounds the sliding-window grants one state read decodes.
const maxGrantsDecoded = 10000

// queueLimiterState queues the state read of a Redisson limiter's overall
// window; nil for other kinds and for per-client limiters (one window per
// client: its family reads those, package family).
func queueLimiterState(ctx context.Context, pipe redis.Pipeliner, info *LimiterInfo) *redis.Cmd {
	if info.Kind != KindRedissonLimiter || info.PerClient {
		return nil
	}
	return queueWindowState(ctx, pipe, info.Name, "")
}

func queueWindowState(ctx context.Context, pipe redis.Pipeliner, name, clientID string) *redis.Cmd {
	return redissonLimiterStateScript.Queue(ctx, pipe,
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

// ClientWindowRead is the pending read of one client's window of a
// per-client Redisson limiter.
type ClientWindowRead struct {
	id  string
	cmd *redis.Cmd
}

// QueueClientWindow queues in pipe the read of client id's window of the
// per-client Redisson limiter at name.
func QueueClientWindow(ctx context.Context, pipe redis.Pipeliner, name, id string) ClientWindowRead {
	return ClientWindowRead{id: id, cmd: queueWindowState(ctx, pipe, name, id)}
}

// Window is the client's window once the pipeline ran, rate being the
// limiter's (a fixed window's used permits are rate less its value);
// false when the client has none or the read failed. ResetInMS is 0 for a
// sliding window.
func (r ClientWindowRead) Window(rate int64) (ClientWindow, bool) {
	ws, ok := readWindowState(r.cmd)
	if !ok || ws.value < 0 {
		return ClientWindow{}, false
	}
	cw := ClientWindow{ClientID: r.id, Available: ws.value, Used: ws.used}
	if !ws.hasGrants && ws.pttlMS > 0 { // a fixed window
		cw.ResetInMS = ws.pttlMS
		cw.Used = max(0, rate-ws.value)
	}
	return cw, true
}

// NoScript reports whether the read failed because Redis lacks the window
// script (restarted, SCRIPT FLUSH, a new node): every read of the same
// pipeline did, and they are read again after LoadScripts.
func (r ClientWindowRead) NoScript() bool { return noScript([]*redis.Cmd{r.cmd}) }

// clientScanCount is the SCAN COUNT of a walk over a limiter's clients.
const clientScanCount = 1000

// redissonClientIDs walks the per-client state keys of the Redisson limiter
// at name ("{name}:value:<client-id>") with SCAN on every master and hands
// each page of client ids to page, one page at a time even when a Cluster's
// masters are scanned concurrently (page needs no locking of its own). A
// page holds at most what one SCAN call returns (COUNT clientScanCount), so a
// caller acting on each page acts in bounded steps; an error from page
// stops the walk and is returned.
func (c *Inspector) redissonClientIDs(ctx context.Context, name string, page func(ids []string) error) error {
	prefix := wire.RedissonValueKey(name, "") + ":"
	return c.nodes.Scan(ctx, glob.Escape(prefix)+"*", "string", clientScanCount, func(keys []string) error {
		ids := make([]string, 0, len(keys))
		for _, k := range keys {
			if id := strings.TrimPrefix(k, prefix); id != "" {
				ids = append(ids, id)
			}
		}
		if len(ids) == 0 {
			return nil
		}
		return page(ids)
	})
}

package inspect

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// NodeStatus is one Redis master as the last Nodes call found it.
type NodeStatus struct {
	Addr string `json:"addr"`
	Up   bool   `json:"up"`
	// Err is why the node is down ("" when up).
	Err string `json:"error,omitempty"`
}

// Nodes pings every master the client routes to, concurrently, one PING
// each: on a Cluster the masters of the slot map, otherwise the one node (a
// Sentinel client's current primary). A master that does not answer is
// reported down and the Cluster client is told to reload its slot map in
// the background, so that a failover is followed without a restart:
// go-redis otherwise keeps dialing a dead master until something reloads
// the map. Once the Cluster has promoted a replica the dead master owns no
// slots and leaves the list. Until a later call finds a master up again,
// Sample reports its keys unreadable without sending them anything: each
// dial of a dead node costs go-redis several retries, more than a tick.
// The error is for a Cluster whose map has never been read; ctx bounds the
// whole call.
//
// It does not use ForEachMaster: that reloads the slot map first, from a
// random node, synchronously, so a hung master (stopped, or behind a
// partition, rather than refusing connections) took the whole deadline one
// call in three and every master read as down.
func (c *Inspector) Nodes(ctx context.Context) ([]NodeStatus, error) {
	cc, ok := c.rdb.(*redis.ClusterClient)
	if !ok {
		return []NodeStatus{pingNode(ctx, nodeName(c.rdb), c.rdb)}, nil
	}
	masters, err := c.masterClients(ctx, cc)
	if err != nil {
		return nil, err
	}
	var (
		mu  sync.Mutex
		out []NodeStatus
		wg  sync.WaitGroup
	)
	for addr, node := range masters {
		wg.Go(func() {
			st := NodeStatus{Addr: addr, Up: true}
			if err := within(ctx, func(ctx context.Context) error { return node.Ping(ctx).Err() }); err != nil {
				st = NodeStatus{Addr: addr, Err: err.Error()}
			}
			mu.Lock()
			out = append(out, st)
			mu.Unlock()
		})
	}
	wg.Wait()
	gone := map[string]downMark{}
	for _, n := range out {
		if !n.Up {
			gone[n.Addr] = downMark{reason: n.Err}
		}
	}
	c.down.Store(&gone)
	if len(gone) > 0 {
		cc.ReloadState(ctx)
	}
	slices.SortFunc(out, func(a, b NodeStatus) int { return strings.Compare(a.Addr, b.Addr) })
	return out, nil
}

// masterClients returns go-redis's client of each master in the slot map,
// by address, without the synchronous reload ForEachMaster starts with.
func (c *Inspector) masterClients(ctx context.Context, cc *redis.ClusterClient) (map[string]*redis.Client, error) {
	slots, err := c.clusterSlots(ctx, cc)
	if err != nil {
		return nil, err
	}
	masters := map[string]*redis.Client{}
	for _, r := range slots {
		// The client go-redis routes this range to, from its cached map.
		node, err := cc.MasterForKey(ctx, wire.SlotKey(uint16(r.Start)))
		if err != nil {
			return nil, err
		}
		masters[node.Options().Addr] = node
	}
	return masters, nil
}

// forEachMaster runs fn on every master concurrently and returns the first
// error, like go-redis's ForEachMaster but over masterClients: no
// synchronous slot-map reload that can wait on a hung node first.
func (c *Inspector) forEachMaster(ctx context.Context, cc *redis.ClusterClient, fn func(context.Context, *redis.Client) error) error {
	masters, err := c.masterClients(ctx, cc)
	if err != nil {
		return err
	}
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for _, node := range masters {
		wg.Go(func() {
			if err := fn(ctx, node); err != nil {
				once.Do(func() { first = err })
			}
		})
	}
	wg.Wait()
	return first
}

// slotsTimeout bounds the slot map read of a health check: the reply comes
// from one node, possibly the one that hangs, and the PINGs need the rest
// of the caller's deadline.
const slotsTimeout = 300 * time.Millisecond

// clusterSlots reads the Cluster's slot ranges, falling back to the last
// ranges read when no answer comes in time (a late answer is kept for the
// next call).
func (c *Inspector) clusterSlots(ctx context.Context, cc *redis.ClusterClient) ([]redis.ClusterSlot, error) {
	sctx, cancel := context.WithTimeout(ctx, slotsTimeout)
	defer cancel()
	err := errSlotsBusy
	if c.slotsBusy.CompareAndSwap(false, true) {
		err = within(sctx, func(sctx context.Context) error {
			defer c.slotsBusy.Store(false)
			slots, err := cc.ClusterSlots(sctx).Result()
			if err == nil && len(slots) == 0 {
				err = errors.New("inspect: the Cluster reports no slots")
			}
			if err == nil {
				c.slots.Store(&slots)
			}
			return err
		})
	}
	if last := c.slots.Load(); last != nil {
		return *last, nil
	}
	if ranges := cachedRanges(ctx, cc); len(ranges) > 0 {
		return ranges, nil
	}
	return nil, err
}

// cachedRanges rebuilds slot ranges from go-redis's own cached slot map
// (MasterForKey needs no round trip once the map is loaded): for a first
// check that finds the node it asks for the map hung. It costs a lookup per
// slot, about a millisecond, and only until one read of the map succeeds.
func cachedRanges(ctx context.Context, cc *redis.ClusterClient) []redis.ClusterSlot {
	var out []redis.ClusterSlot
	for slot := 0; slot < 16384; slot++ {
		node, err := cc.MasterForKey(ctx, wire.SlotKey(uint16(slot)))
		if err != nil {
			return nil
		}
		addr := node.Options().Addr
		if n := len(out); n > 0 && out[n-1].Nodes[0].Addr == addr && out[n-1].End == slot-1 {
			out[n-1].End = slot
			continue
		}
		out = append(out, redis.ClusterSlot{Start: slot, End: slot, Nodes: []redis.ClusterNode{{Addr: addr}}})
	}
	return out
}

var errSlotsBusy = errors.New("inspect: the last slot map read has not returned")

// within runs f and returns its error, or ctx's as soon as ctx ends: a
// client without ContextTimeoutEnabled waits for a hung node until its own
// read timeout, and f is then left to finish on its own (one call per node
// per check; the slot map read is never started twice).
func within(ctx context.Context, f func(context.Context) error) error {
	done := make(chan error, 1)
	go func() { done <- f(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func pingNode(ctx context.Context, addr string, rdb redis.Cmdable) NodeStatus {
	if err := rdb.Ping(ctx).Err(); err != nil {
		return NodeStatus{Addr: addr, Err: err.Error()}
	}
	return NodeStatus{Addr: addr, Up: true}
}

// nodeName names a non-Cluster client's node: its address, or "primary"
// for a Sentinel client, whose address changes with failovers.
func nodeName(rdb redis.UniversalClient) string {
	if c, ok := rdb.(*redis.Client); ok && c.Options().Addr != "FailoverClient" {
		return c.Options().Addr
	}
	return "primary"
}

// execPartial runs a sample's pipeline. On one node a failure to talk to
// Redis fails the sample, as before. On a Cluster each master's part runs
// on its own, so a master that does not answer only leaves its commands
// failed (the caller sorts them out per object). But go-redis retries a
// dead master's dials for longer than a tick, and a pipeline whose context
// ends marks every command failed: so the pipeline gets two thirds of
// ctx's time, and cut says it used them up (the caller finds the dead
// master by its commands' dial errors and reads again without it).
func (c *Inspector) execPartial(ctx context.Context, pipe redis.Pipeliner) (cmds []redis.Cmder, cut bool, err error) {
	if _, ok := c.rdb.(*redis.ClusterClient); !ok {
		cmds, err = execTolerantCmds(ctx, pipe)
		return cmds, false, err
	}
	ectx := ctx
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ectx, cancel = context.WithTimeout(ctx, time.Until(dl)*2/3)
		defer cancel()
	}
	cmds, err = pipe.Exec(ectx)
	if err != nil && ectx.Err() != nil {
		if ctx.Err() != nil {
			return cmds, false, ctx.Err()
		}
		return cmds, true, nil
	}
	return cmds, false, nil
}

// errSampleCut is a Cluster sample that ran out of time without any
// master failing to answer: the Cluster is slow, not partly down.
var errSampleCut = errors.New("inspect: sample pipeline ran out of time")

// downMark is a master taken as down. One a sample found (until set) is
// dialed again after downMarkTTL even if no Nodes call says it is back.
type downMark struct {
	reason string
	until  time.Time // zero: until the next Nodes call
}

const downMarkTTL = 5 * time.Second

// markDown takes the masters of the objects a sample could not read as
// down, so the next samples skip them without waiting on their dials.
func (c *Inspector) markDown(unread map[string]Unread) {
	nodes := map[string]string{}
	for _, u := range unread {
		if u.Node != "" && !errors.Is(u.Err, ErrNodeDown) {
			nodes[u.Node] = u.Err.Error()
		}
	}
	if len(nodes) == 0 {
		return
	}
	if _, ok := c.rdb.(*redis.ClusterClient); !ok {
		return // one node: nothing else to read instead
	}
	until := time.Now().Add(downMarkTTL)
	for {
		old := c.down.Load()
		next := map[string]downMark{}
		if old != nil {
			maps.Copy(next, *old)
		}
		for n, reason := range nodes {
			next[n] = downMark{reason: reason, until: until}
		}
		if c.down.CompareAndSwap(old, &next) {
			return
		}
	}
}

// markFailedNodes marks down the masters of the commands that failed to
// reach their node (not those cut by the context) and reports whether
// there were any.
func (c *Inspector) markFailedNodes(ctx context.Context, cmds []redis.Cmder) bool {
	unread := map[string]Unread{}
	for _, cmd := range cmds {
		err := cmd.Err()
		if !nodeFailure(err) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			continue
		}
		if args := cmd.Args(); len(args) > 1 {
			if key, ok := args[1].(string); ok {
				unread[key] = Unread{Node: c.nodeOf(ctx, key), Err: err}
			}
			continue
		}
		// A keyless command (TIME): its node is the address it dialed.
		var op *net.OpError
		if errors.As(err, &op) && op.Addr != nil {
			unread[""] = Unread{Node: op.Addr.String(), Err: err}
		}
	}
	c.markDown(unread)
	return len(unread) > 0
}

// ErrNodeDown is why Sample left an object unread whose master the last
// Nodes call found down.
var ErrNodeDown = errors.New("inspect: Redis node down")

// downNodes is the masters the last Nodes call found down; nil off a
// Cluster or when all answered.
func (c *Inspector) downNodes() map[string]string {
	if _, ok := c.rdb.(*redis.ClusterClient); !ok {
		return nil
	}
	p := c.down.Load()
	if p == nil {
		return nil
	}
	var out map[string]string
	now := time.Now()
	for addr, m := range *p {
		if m.until.IsZero() || now.Before(m.until) {
			if out == nil {
				out = map[string]string{}
			}
			out[addr] = m.reason
		}
	}
	return out
}

// skipDown splits names into those to read and those whose key or stats
// ring lives on a master in down (recorded in skipped).
func (c *Inspector) skipDown(ctx context.Context, names []string, down map[string]string, skipped map[string]Unread) []string {
	keep := make([]string, 0, len(names))
	for _, n := range names {
		node := c.nodeOf(ctx, n)
		if _, bad := down[node]; !bad {
			if ring := c.nodeOf(ctx, wire.StatsKey(n)); ring != node {
				if _, bad = down[ring]; bad {
					node = ring
				}
			}
		}
		if reason, bad := down[node]; bad {
			skipped[n] = Unread{Node: node, Err: fmt.Errorf("%w: %s", ErrNodeDown, reason)}
			continue
		}
		keep = append(keep, n)
	}
	return keep
}

// timeFromLiveMaster asks every master not in down for TIME at once and
// takes the first answer: the pipeline's own TIME failed with failed, or
// was not sent because a master is down (failed nil). Only a Cluster has
// another node to ask; this costs one TIME per master, and only in a tick
// with a master down.
func (c *Inspector) timeFromLiveMaster(ctx context.Context, failed error, down map[string]string) (time.Time, error) {
	cc, ok := c.rdb.(*redis.ClusterClient)
	if !ok || (failed != nil && !nodeFailure(failed)) {
		return time.Time{}, failed
	}
	masters, err := c.masterClients(ctx, cc)
	if err != nil {
		return time.Time{}, fmt.Errorf("inspect: no Redis master answered TIME: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := make(chan time.Time, 1)
	errs := make(chan error, len(masters))
	asked := 0
	for addr, node := range masters {
		if reason, bad := down[addr]; bad && !refusesKeysOnly(reason) {
			continue
		}
		asked++
		go func() {
			var t time.Time
			err := within(ctx, func(ctx context.Context) (err error) {
				t, err = node.Time(ctx).Result()
				return err
			})
			if err != nil {
				errs <- err
				return
			}
			select {
			case got <- t:
			default:
			}
			errs <- nil
		}()
	}
	var firstErr error
	for range asked {
		select {
		case t := <-got:
			return t, nil // the slower masters' answers are not needed
		case err := <-errs:
			firstErr = cmp.Or(firstErr, err)
		}
	}
	select {
	case t := <-got:
		return t, nil
	default:
	}
	if firstErr == nil {
		firstErr = failed
	}
	if firstErr == nil {
		firstErr = errors.New("every master is down")
	}
	return time.Time{}, fmt.Errorf("inspect: no Redis master answered TIME: %w", firstErr)
}

// unreadable records name in s.Unreadable when any of its reads failed for
// want of an answer from its node; nil commands are skipped.
func (c *Inspector) unreadable(ctx context.Context, s *Sample, name string, cmds ...redis.Cmder) bool {
	for _, cmd := range cmds {
		if cmd == nil || !nodeFailure(cmd.Err()) {
			continue
		}
		if s.Unreadable == nil {
			s.Unreadable = map[string]Unread{}
		}
		s.Unreadable[name] = Unread{Node: c.nodeOf(ctx, name), Err: cmd.Err()}
		return true
	}
	return false
}

// nodeOf names the master that holds key: on a Cluster, by the client's
// slot map (no round trip once the map is loaded).
func (c *Inspector) nodeOf(ctx context.Context, key string) string {
	cc, ok := c.rdb.(*redis.ClusterClient)
	if !ok {
		return nodeName(c.rdb)
	}
	node, err := cc.MasterForKey(ctx, key)
	if err != nil {
		return ""
	}
	return node.Options().Addr
}

// nodeUnavailable are the error replies of a node that cannot serve reads
// for now, whatever the key: they say nothing about the key itself.
var nodeUnavailable = []string{"CLUSTERDOWN", "LOADING", "MASTERDOWN", "TRYAGAIN", "BUSY ", "READONLY"}

// IsClusterDown says err (or a reason built from one) is a node's
// CLUSTERDOWN refusal: the Cluster lost a master with no replica and
// requires every slot to be served.
func IsClusterDown(reason string) bool { return strings.Contains(reason, "CLUSTERDOWN") }

// refusesKeysOnly says a down reason is a reply of a node that answers but
// serves no keys (CLUSTERDOWN when a master without a replica is gone and
// the Cluster requires full coverage): it still answers TIME, which has no
// key, so a sample can stand with every object marked unreadable.
func refusesKeysOnly(reason string) bool {
	for _, p := range nodeUnavailable {
		if strings.Contains(reason, p) {
			return true
		}
	}
	return false
}

// nodeFailure reports whether err means the node did not answer a read
// (unreachable, or refusing every key), as opposed to an answer about the
// key (a nil or an error such as WRONGTYPE).
func nodeFailure(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) {
		return false
	}
	if !isReplyError(err) {
		return true
	}
	msg := err.Error()
	for _, p := range nodeUnavailable {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// stepOffDown is step without the walk's reads of keys on a master in
// down (and without the registry read when the registry lives there).
func (c *Inspector) stepOffDown(ctx context.Context, step *scanStep, down map[string]string) *scanStep {
	if step == nil {
		return nil
	}
	up := func(key string) bool {
		_, bad := down[c.nodeOf(ctx, key)]
		return !bad
	}
	out := *step
	if out.registry != nil && !up(RegistryNamesKey) {
		out.registry = nil
	}
	out.size = slices.DeleteFunc(slices.Clone(out.size), func(k string) bool { return !up(k) })
	out.read = slices.DeleteFunc(slices.Clone(out.read), func(k string) bool { return !up(k) })
	if cs := out.counts; cs != nil && cs.cluster { // each channel's count goes to its slot's master
		n := *cs
		n.reqs = slices.DeleteFunc(slices.Clone(cs.reqs), func(r countReq) bool { return !up(r.channel) })
		out.counts = &n
	}
	return &out
}

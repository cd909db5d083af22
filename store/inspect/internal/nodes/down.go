package nodes

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// mark is a master taken as down. One a read found (until set) is dialed
// again after markTTL even if no Ping says it is back.
type mark struct {
	reason string
	until  time.Time // zero: until the next Ping
}

const markTTL = 5 * time.Second

// Down is the masters taken as down (node -> why); nil off a Cluster or
// when all answered.
func (s *Set) Down() map[string]string {
	if _, ok := s.rdb.(*redis.ClusterClient); !ok {
		return nil
	}
	p := s.down.Load()
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

// MarkDown takes the masters a read found not answering (node -> why) as
// down, so the next reads skip them without waiting on their dials. Off a
// Cluster it does nothing: there is no other node to read instead.
func (s *Set) MarkDown(nodes map[string]string) {
	if len(nodes) == 0 {
		return
	}
	if _, ok := s.rdb.(*redis.ClusterClient); !ok {
		return
	}
	until := time.Now().Add(markTTL)
	for {
		old := s.down.Load()
		next := map[string]mark{}
		if old != nil {
			maps.Copy(next, *old)
		}
		for n, reason := range nodes {
			next[n] = mark{reason: reason, until: until}
		}
		if s.down.CompareAndSwap(old, &next) {
			return
		}
	}
}

// MarkFailed marks down the masters of the commands that failed to reach
// their node (not those cut by the context) and reports whether there
// were any.
func (s *Set) MarkFailed(ctx context.Context, cmds []redis.Cmder) bool {
	failed := map[string]string{}
	found := false
	for _, cmd := range cmds {
		err := cmd.Err()
		if !Failure(err) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			continue
		}
		if args := cmd.Args(); len(args) > 1 {
			if key, ok := args[1].(string); ok {
				found = true
				if node := s.NodeOf(ctx, key); node != "" {
					failed[node] = err.Error()
				}
			}
			continue
		}
		// A keyless command (TIME): its node is the address it dialed.
		var op *net.OpError
		if errors.As(err, &op) && op.Addr != nil {
			found = true
			failed[op.Addr.String()] = err.Error()
		}
	}
	s.MarkDown(failed)
	return found
}

// TimeFromLive asks every master not in down for TIME at once and takes
// the first answer: a pipeline's own TIME failed with failed, or was not
// sent because a master is down (failed nil). Only a Cluster has another
// node to ask; this costs one TIME per master, and only in a tick with a
// master down.
func (s *Set) TimeFromLive(ctx context.Context, failed error, down map[string]string) (time.Time, error) {
	cc, ok := s.rdb.(*redis.ClusterClient)
	if !ok || (failed != nil && !Failure(failed)) {
		return time.Time{}, failed
	}
	masters, err := s.Masters(ctx, cc)
	if err != nil {
		return time.Time{}, fmt.Errorf("inspect: no Redis master answered TIME: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := make(chan time.Time, 1)
	errs := make(chan error, len(masters))
	asked := 0
	for addr, node := range masters {
		if reason, bad := down[addr]; bad && !RefusesKeysOnly(reason) {
			continue
		}
		asked++
		go func() {
			var t time.Time
			err := Within(ctx, func(ctx context.Context) (err error) {
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

package nodes

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Exec runs a pipeline of reads and fails only on transport or context
// errors. An error reply to one command (WRONGTYPE for a key that changed
// type since it was listed) stays on that command for the caller to treat
// as "not an object of that kind".
func Exec(ctx context.Context, pipe redis.Pipeliner) error {
	_, err := ExecCmds(ctx, pipe)
	return err
}

// ExecCmds is Exec that also returns the commands run.
func ExecCmds(ctx context.Context, pipe redis.Pipeliner) ([]redis.Cmder, error) {
	cmds, err := pipe.Exec(ctx)
	if err == nil {
		return cmds, nil
	}
	if !IsReplyError(err) {
		return cmds, err
	}
	for _, cmd := range cmds {
		if e := cmd.Err(); e != nil && !IsReplyError(e) {
			return cmds, e
		}
	}
	return cmds, nil
}

// IsReplyError reports whether err is an error reply from Redis (including
// redis.Nil) rather than a failure to talk to it.
func IsReplyError(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

// CountByName counts commands by name.
func CountByName(cmds []redis.Cmder) map[string]int {
	n := make(map[string]int, 12)
	for _, c := range cmds {
		n[c.Name()]++
	}
	return n
}

// ExecPartial runs a sample's pipeline. On one node a failure to talk to
// Redis fails the sample. On a Cluster each master's part runs on its own,
// so a master that does not answer only leaves its commands failed (the
// caller sorts them out per object). But go-redis retries a dead master's
// dials for longer than a tick, and a pipeline whose context ends marks
// every command failed: so the pipeline gets two thirds of ctx's time, and
// cut says it used them up (the caller finds the dead master by its
// commands' dial errors and reads again without it).
func (s *Set) ExecPartial(ctx context.Context, pipe redis.Pipeliner) (cmds []redis.Cmder, cut bool, err error) {
	if _, ok := s.rdb.(*redis.ClusterClient); !ok {
		cmds, err = ExecCmds(ctx, pipe)
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

// unavailable are the error replies of a node that cannot serve reads for
// now, whatever the key: they say nothing about the key itself.
var unavailable = []string{"CLUSTERDOWN", "LOADING", "MASTERDOWN", "TRYAGAIN", "BUSY ", "READONLY"}

// RefusesKeysOnly says a down reason is a reply of a node that answers but
// serves no keys (CLUSTERDOWN when a master without a replica is gone and
// the Cluster requires full coverage): it still answers TIME, which has no
// key, so a sample can stand with every object marked unreadable.
func RefusesKeysOnly(reason string) bool {
	for _, p := range unavailable {
		if strings.Contains(reason, p) {
			return true
		}
	}
	return false
}

// Failure reports whether err means the node did not answer a read
// (unreachable, or refusing every key), as opposed to an answer about the
// key (a nil or an error such as WRONGTYPE).
func Failure(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) {
		return false
	}
	if !IsReplyError(err) {
		return true
	}
	msg := err.Error()
	for _, p := range unavailable {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

package inspecttest

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Trips is a redis.Hook that counts what a client sends: single commands
// and pipelines, leaving out the handshake go-redis runs on every new
// connection.
type Trips struct{ Single, Pipelines atomic.Int64 }

func handshake(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "hello", "client", "auth", "select", "readonly":
		return true
	}
	return false
}

func (h *Trips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *Trips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !handshake(cmd) {
			h.Single.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (h *Trips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && !handshake(cmds[0]) {
			h.Pipelines.Add(1)
		}
		return next(ctx, cmds)
	}
}

package wire

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Sending a script call exactly once.
//
// go-redis's Script.Run re-sends after a read timeout or a dropped
// connection (when the first send may have run) and answers NOSCRIPT with
// EVAL, which is fine for reads only. The helpers here send an EVALSHA
// that go-redis will not re-send, and when Redis answers NOSCRIPT (the
// script did not run: restart, SCRIPT FLUSH, a new Cluster node) they send
// the script's text with EVAL, also once. EVAL cannot answer NOSCRIPT, so
// a flush that lands between a SCRIPT LOAD and the next EVALSHA (which
// load-then-retry would meet) cannot surface to the caller.

// sources maps a script's SHA1 to its text, for the EVAL after NOSCRIPT.
var sources sync.Map

// NewScript is redis.NewScript that also keeps src, so calls sent with
// RunOnce or SendOnce can fall back to EVAL. Declare every script a
// library call runs with it.
func NewScript(src string) *redis.Script {
	s := redis.NewScript(src)
	sources.Store(s.Hash(), src)
	return s
}

// Processor is what sending a command needs: redis.Client, ClusterClient,
// Ring, UniversalClient and Pipeliner all have it.
type Processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// NoRetryCmd is a command go-redis must not re-send: its single command
// retry (redis.go _process, v9.23) fires after a read timeout or a dropped
// connection, exactly when the first send may have run, and is skipped for
// a command whose NoRetry is true (processWithRetry; the Cluster client
// checks it too, and a pipeline holding one is not replayed either,
// cmdsContainNoRetry).
type NoRetryCmd struct{ *redis.Cmd }

// NoRetry tells go-redis not to re-send the command.
func (NoRetryCmd) NoRetry() bool { return true }

// SendOnce sends one command (any command, not only scripts) that go-redis
// must not re-send. Errors are on the returned Cmd.
func SendOnce(ctx context.Context, rdb Processor, args []any) *redis.Cmd {
	cmd := redis.NewCmd(ctx, args...)
	_ = rdb.Process(ctx, NoRetryCmd{cmd})
	return cmd
}

// EvalArgs turns an "evalsha", sha, numkeys, ... command into the "eval",
// text, numkeys, ... command that runs the same script; ok is false when
// args is not an EVALSHA of a script declared with NewScript.
func EvalArgs(args []any) (eval []any, ok bool) {
	if len(args) < 3 || args[0] != "evalsha" {
		return nil, false
	}
	sha, _ := args[1].(string)
	src, found := sources.Load(sha)
	if !found {
		return nil, false
	}
	eval = make([]any, len(args))
	copy(eval, args)
	eval[0], eval[1] = "eval", src
	return eval, true
}

// IsNoScript reports Redis's NOSCRIPT reply: the script did not run.
func IsNoScript(err error) bool { return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") }

// RunOnce sends an "evalsha", sha, numkeys, keys..., argv... command once;
// on NOSCRIPT it sends the script's text with EVAL once. The script ran at
// most once whatever the result. A NOSCRIPT for a script not declared with
// NewScript is returned as it is (it did not run).
func RunOnce(ctx context.Context, rdb Processor, args []any) *redis.Cmd {
	cmd := SendOnce(ctx, rdb, args)
	if IsNoScript(cmd.Err()) {
		if eval, ok := EvalArgs(args); ok {
			cmd = SendOnce(ctx, rdb, eval)
		}
	}
	return cmd
}

// EvalShaArgs builds the EVALSHA command of s over keys and argv.
func EvalShaArgs(s *redis.Script, keys []string, argv ...any) []any {
	args := make([]any, 0, 3+len(keys)+len(argv))
	args = append(args, "evalsha", s.Hash(), len(keys))
	for _, k := range keys {
		args = append(args, k)
	}
	return append(args, argv...)
}

// RunScriptOnce is Script.Run without go-redis's re-sends: s (declared with
// NewScript) runs at most once.
func RunScriptOnce(ctx context.Context, rdb Processor, s *redis.Script, keys []string, argv ...any) *redis.Cmd {
	return RunOnce(ctx, rdb, EvalShaArgs(s, keys, argv...))
}

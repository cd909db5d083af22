package wire

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Sending a script call exactly once.
//
// go-redis's Script.Run re-sends after a read timeout or a dropped
// connection (when the first send may have run) and answers NOSCRIPT with
// EVAL, which is fine for reads only. A Script here goes out as an EVALSHA
// that go-redis will not re-send, and when Redis answers NOSCRIPT (the
// script did not run: restart, SCRIPT FLUSH, a new Cluster node) its text
// goes out with EVAL, also once. EVAL cannot answer NOSCRIPT, so a flush
// that lands between a SCRIPT LOAD and the next EVALSHA (which
// load-then-retry would meet) cannot surface to the caller.

// Script is a Lua script sent the one way this module sends scripts (see
// above). Declare every script with NewScript.
type Script struct {
	src, sha string
}

// sources maps a script's SHA1 to its text, for the EVAL after NOSCRIPT
// of a call known only by its arguments (EvalArgs).
var sources sync.Map

// NewScript declares the script src.
func NewScript(src string) *Script {
	sum := sha1.Sum([]byte(src))
	s := &Script{src: src, sha: hex.EncodeToString(sum[:])}
	sources.Store(s.sha, src)
	return s
}

// Hash is the script's SHA1, as EVALSHA names it.
func (s *Script) Hash() string { return s.sha }

// Args is the script's EVALSHA command over keys and argv: "evalsha", sha,
// numkeys, keys..., argv.... go-redis only reads the slice, so a call whose
// keys and arguments never change can build it once and share it.
func (s *Script) Args(keys []string, argv ...any) []any {
	args := make([]any, 0, 3+len(keys)+len(argv))
	args = append(args, "evalsha", s.sha, strconv.Itoa(len(keys)))
	for _, k := range keys {
		args = append(args, k)
	}
	return append(args, argv...)
}

// Run runs the script over keys and argv at most once (RunOnce of Args).
func (s *Script) Run(ctx context.Context, rdb Processor, keys []string, argv ...any) *redis.Cmd {
	return RunOnce(ctx, rdb, s.Args(keys, argv...))
}

// Queue adds the script's EVALSHA over keys and argv to pipe, marked not to
// be re-sent. After pipe.Exec, EvalNoScript runs the calls Redis answered
// NOSCRIPT.
func (s *Script) Queue(ctx context.Context, pipe Processor, keys []string, argv ...any) *redis.Cmd {
	cmd := redis.NewCmd(ctx, s.Args(keys, argv...)...)
	_ = pipe.Process(ctx, NoRetryCmd{cmd})
	return cmd
}

// Load sends the script's text with SCRIPT LOAD, so that the EVALSHA calls
// after it find it (a ClusterClient loads it on every master).
func (s *Script) Load(ctx context.Context, rdb redis.Scripter) *redis.StringCmd {
	return rdb.ScriptLoad(ctx, s.src)
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

// sendOnce sends one command that go-redis must not re-send. Errors are on
// the returned Cmd.
func sendOnce(ctx context.Context, rdb Processor, args []any) *redis.Cmd {
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

// RunOnce sends an EVALSHA command (Script.Args) once; on NOSCRIPT it
// sends the script's text with EVAL once. The script ran at most once
// whatever the result. A NOSCRIPT for a script not declared with NewScript
// is returned as it is (it did not run).
func RunOnce(ctx context.Context, rdb Processor, args []any) *redis.Cmd {
	cmd := sendOnce(ctx, rdb, args)
	if IsNoScript(cmd.Err()) {
		if eval, ok := EvalArgs(args); ok {
			cmd = sendOnce(ctx, rdb, eval)
		}
	}
	return cmd
}

// PipelineClient starts pipelines: redis.Client, ClusterClient, Ring and
// UniversalClient have it.
type PipelineClient interface {
	Pipeline() redis.Pipeliner
}

// EvalNoScript sends again, as EVAL in one pipeline, each of cmds (queued
// with Script.Queue and executed) that Redis answered NOSCRIPT, and sets
// its reply on it. Those calls did not run, so this is their one run. The
// error is the pipeline's; nothing is sent when no call needs it.
func EvalNoScript(ctx context.Context, rdb PipelineClient, cmds []*redis.Cmd) error {
	var again, evals []*redis.Cmd
	var pipe redis.Pipeliner
	for _, c := range cmds {
		if c == nil || !IsNoScript(c.Err()) {
			continue
		}
		eval, ok := EvalArgs(c.Args())
		if !ok {
			continue
		}
		if pipe == nil {
			pipe = rdb.Pipeline()
		}
		e := redis.NewCmd(ctx, eval...)
		_ = pipe.Process(ctx, NoRetryCmd{e})
		again, evals = append(again, c), append(evals, e)
	}
	if pipe == nil {
		return nil
	}
	_, err := pipe.Exec(ctx)
	for i, c := range again {
		c.SetVal(evals[i].Val())
		c.SetErr(evals[i].Err())
	}
	return err
}

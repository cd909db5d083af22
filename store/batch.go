package store

import (
	"context"
	"runtime"
	"sync"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// A batcher sends the hot script calls of one Client (lock and unlock of a
// free lock, a one-permit bucket decision, a renewal) that arrive from many
// goroutines at once as one pipeline. Redis then reads, runs and answers N
// EVALSHA with one read and one write instead of N of each, and so does the
// client: at 16 or 64 concurrent callers that is most of the CPU a call
// costs on either side.
//
// A call that finds nothing in flight goes out on its own at once, as it
// would without a batcher, so a lone caller pays only a mutex. Calls that
// arrive while their lane's calls or batches are on the wire (maxInFlight
// without a WAIT, maxAckedInFlight with one) queue up; whoever finishes
// first starts a flusher goroutine that sends the lane's queue as one
// pipeline and keeps doing so while calls keep arriving, then exits:
// nothing runs while a Client is idle, so a dropped Client leaks nothing.
//
// Semantics a caller keeps:
//   - Its ctx bounds its wait. When ctx ends first it returns ctx's error at
//     once, and, like a single call whose context ends after it was written,
//     the call may still run. A queued call whose ctx ended before its batch
//     was written is left out. The pipeline runs under a context without
//     the callers' cancellation (one caller must not fail the others' calls)
//     whose deadline is the latest of theirs, or none if one of them has none.
//   - Errors are per call: each call gets its own reply or error.
//   - NOSCRIPT (Redis restarted, SCRIPT FLUSH): a call Redis did not run for
//     lack of its script is not lost; those calls are sent again, once, as
//     EVAL with the script's text (they never ran, so this runs them once,
//     and EVAL cannot meet a NOSCRIPT from the next flush).
//   - No new double execution. go-redis retries a pipeline as a whole after
//     a network error (generalProcessPipelineFrom in redis.go, v9.23), even
//     when it had already read some of the replies: calls that ran and were
//     answered would run again, which a lone EVALSHA never does (go-redis
//     only retries a single command that got no reply, exactly the case in
//     which any timed-out call may or may not have run). So batch commands
//     say NoRetry, which go-redis honours for the whole pipeline
//     (cmdsContainNoRetry): a batch that loses its connection fails every
//     call in it with the network error, each of which may have run, the
//     same contract as a single call whose retries ran out.
//   - Each queue is bounded (maxQueued): beyond it a call goes out on its own.
type batcher struct {
	rdb redis.UniversalClient

	mu sync.Mutex
	// plain carries calls without a WAIT, acked those that end with one.
	// They are apart so that a release or a bucket decision never waits
	// behind a replica's acknowledgement (TestReplicaAckReleaseDoesNot-
	// QueueBehindWaits), and so that the grants which arrive while one
	// acknowledged batch waits for its replica go out together behind one
	// WAIT.
	plain, acked lane
}

// lane is one class of calls: how many are on the wire and the queue.
type lane struct {
	max      int          // calls or batches on the wire before newcomers queue
	inFlight int          // direct calls and flushers running
	queue    []*batchCall // waiting for the next batch
}

const (
	// maxInFlight is how many calls or batches without a WAIT may be on
	// the wire at once before newcomers queue: two lets Redis run one
	// batch while the client reads the previous one's replies and writes
	// the next.
	maxInFlight = 2
	// maxAckedInFlight is the same for calls that end with a WAIT. One:
	// such a batch spends most of its time waiting for the replica, and
	// every grant that arrives meanwhile joins the next batch, so a WAIT
	// (and the GETACK round it sets off on the master and its replica)
	// answers for every grant that arrived during the last one. Case 1 of
	// e2e/bench with a replica at C=16, 4 rounds each, alternated: 1, 2
	// and 3 gave the same pairs/s within the rounds' spread (acks on ÷ off
	// 0.65–0.70), and 1 the fewest WAITs (0.15 per pair against 0.26).
	maxAckedInFlight = 1
	// maxQueued bounds a queue, and so a batch.
	maxQueued = 256
)

// batchCall is one queued call. done is closed once cmd holds the reply.
type batchCall struct {
	ctx  context.Context
	p    *preparedCall
	cmd  *redis.Cmd
	done chan struct{}
	// wait asks for replica acknowledgement (replica_ack.go); ack is its
	// outcome, set with cmd.
	wait    waitSpec
	waitCmd *redis.Cmd
	ack     error
}

func newBatcher(rdb redis.UniversalClient) *batcher {
	return &batcher{rdb: rdb, plain: lane{max: maxInFlight}, acked: lane{max: maxAckedInFlight}}
}

func (b *batcher) lane(w waitSpec) *lane {
	if w.n > 0 {
		return &b.acked
	}
	return &b.plain
}

// run sends p, in a batch when other calls are in flight.
func (b *batcher) run(ctx context.Context, p *preparedCall) *redis.Cmd {
	cmd, _ := b.runWait(ctx, p, waitSpec{})
	return cmd
}

// runWait is run followed by the WAIT of w (none when w.n is 0): a batch
// of such calls ends with one WAIT, which covers every write before it on
// the connection. ack is w.check's verdict.
func (b *batcher) runWait(ctx context.Context, p *preparedCall, w waitSpec) (cmd *redis.Cmd, ack error) {
	l := b.lane(w)
	b.mu.Lock()
	if l.inFlight < l.max || len(l.queue) >= maxQueued {
		direct := l.inFlight < l.max
		if direct {
			l.inFlight++
		}
		b.mu.Unlock()
		if w.n > 0 {
			cmd, ack = runWithWait(ctx, b.rdb, p.cmd, w)
		} else {
			cmd = p.run(ctx, b.rdb)
		}
		if direct {
			b.done(l)
		}
		return cmd, ack
	}
	call := &batchCall{ctx: ctx, p: p, done: make(chan struct{}), wait: w}
	l.queue = append(l.queue, call)
	b.mu.Unlock()
	select {
	case <-call.done:
		return call.cmd, call.ack
	case <-ctx.Done():
		// The call may still run (see batcher); its reply is dropped.
		cmd := redis.NewCmd(ctx, p.cmd...)
		cmd.SetErr(markUncertain(ctx.Err()))
		if w.n > 0 {
			ack = &ReplicationError{Want: w.n, Err: cmd.Err()}
		}
		return cmd, ack
	}
}

// done gives back an in-flight slot of l, or hands it to a flusher when
// calls are queued.
func (b *batcher) done(l *lane) {
	b.mu.Lock()
	if len(l.queue) == 0 {
		l.inFlight--
		b.mu.Unlock()
		return
	}
	batch := l.queue
	l.queue = nil
	b.mu.Unlock()
	go b.flush(l, batch)
}

// flush sends batches until the queue is empty, then gives back its slot.
//
// After answering a batch it yields once when fewer calls are queued than
// it just answered: the callers it woke mostly call again at once (an
// Unlock after a Lock), and on a busy machine they run only after the
// flusher, which would otherwise send the few calls queued so far, or give
// its slot back and let the next call go out alone. Measured with case 1
// of e2e/bench at C=16 (three runs of 10 rounds, both ways in every
// round): 1.00× redislock's pairs/s with the yield, 0.85× without, batches
// of about 5 calls without it and Redis's CPU per pair 16.2 µs against
// 18.2; case 3 at C=16 made 19–20 % more decisions; C=64 stayed within
// its spread. A lone caller never gets here.
func (b *batcher) flush(l *lane, batch []*batchCall) {
	for {
		b.send(batch)
		b.mu.Lock()
		if len(l.queue) < len(batch) {
			b.mu.Unlock()
			runtime.Gosched()
			b.mu.Lock()
		}
		if len(l.queue) == 0 {
			l.inFlight--
			b.mu.Unlock()
			return
		}
		batch = l.queue
		l.queue = nil
		b.mu.Unlock()
	}
}

// send runs one batch as a pipeline and answers every call in it.
func (b *batcher) send(batch []*batchCall) {
	live := batch[:0:0]
	for _, c := range batch {
		if c.ctx.Err() == nil {
			live = append(live, c)
		}
	}
	if len(live) == 0 {
		return
	}
	ctx, cancel := batchContext(live)
	defer cancel()
	b.exec(ctx, live, false)
	var missing []*batchCall
	for _, c := range live {
		if wire.IsNoScript(c.cmd.Err()) {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		b.exec(ctx, missing, true)
	}
	for _, c := range live {
		c.cmd.SetErr(markUncertain(c.cmd.Err()))
		if c.wait.n > 0 {
			c.ack = c.wait.check(c.waitCmd)
		}
		close(c.done)
	}
}

// exec sends calls as one pipeline, each with a new Cmd: their EVALSHA, or
// with eval their script's text as EVAL (a call whose script text is not
// known keeps its NOSCRIPT reply: it did not run). When a call asks for
// replica acknowledgement the pipeline ends with the largest WAIT asked,
// which answers for every call of the pipeline (it covers the writes
// before it on the connection).
func (b *batcher) exec(ctx context.Context, calls []*batchCall, eval bool) {
	pipe := b.rdb.Pipeline()
	var w waitSpec
	for _, c := range calls {
		if c.wait.n > w.n {
			w = c.wait
		}
		args := c.p.cmd
		if eval {
			e, ok := wire.EvalArgs(args)
			if !ok {
				continue
			}
			args = e
		}
		c.cmd = redis.NewCmd(ctx, args...)
		_ = pipe.Process(ctx, wire.NoRetryCmd{Cmd: c.cmd})
	}
	if w.n > 0 {
		wait := redis.NewCmd(ctx, w.args()...)
		_ = pipe.Process(ctx, wire.NoRetryCmd{Cmd: wait})
		for _, c := range calls {
			c.waitCmd = wait
		}
	}
	_, _ = pipe.Exec(ctx) // errors are on each Cmd
}

// batchContext is the context a batch runs under: the first caller's
// values, none of the callers' cancellation, and the latest of their
// deadlines (none if a caller has none), so a batch is bounded whenever
// every caller in it is.
func batchContext(calls []*batchCall) (context.Context, context.CancelFunc) {
	var latest time.Time
	for _, c := range calls {
		d, ok := c.ctx.Deadline()
		if !ok {
			return context.WithoutCancel(calls[0].ctx), func() {}
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(context.WithoutCancel(calls[0].ctx), latest)
}

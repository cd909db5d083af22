package store

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// pipeHook records the script pipelines a client sends: how many, the largest, and
// whether every command in them refused go-redis's whole-batch replay.
type pipeHook struct {
	pipelines, largest, retryable atomic.Int64
	singles                       atomic.Int64 // lock scripts' EVALSHA sent on their own
}

func (h *pipeHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *pipeHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); cmd.Name() == "evalsha" && len(args) > 1 &&
			(args[1] == lockAcquireScript.w.Hash() || args[1] == lockReleaseScript.w.Hash()) {
			h.singles.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (h *pipeHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if cmds[0].Name() != "evalsha" {
			return next(ctx, cmds) // go-redis's own set-up of a new connection
		}
		h.pipelines.Add(1)
		for {
			l := h.largest.Load()
			if int64(len(cmds)) <= l || h.largest.CompareAndSwap(l, int64(len(cmds))) {
				break
			}
		}
		for _, c := range cmds {
			if !c.NoRetry() {
				h.retryable.Add(1)
			}
		}
		return next(ctx, cmds)
	}
}

func hookedClient(t *testing.T) (*redis.Client, *pipeHook) {
	rdb := redistest.Client(t)
	h := &pipeHook{}
	rdb.AddHook(h)
	return rdb, h
}

// lockUnlockLoad runs conc goroutines, each locking and unlocking its own
// key rounds times, and fails the test on any error.
func lockUnlockLoad(t *testing.T, c *Client, prefix string, conc, rounds int) {
	t.Helper()
	locks := make([]*Lock, conc)
	for g := range locks {
		locks[g] = c.NewLock(fmt.Sprintf("%slock:%d", prefix, g), nil)
	}
	holdLoop(t, t.Context(), locks, rounds, nil)
}

func TestBatchConcurrentCallsSharePipelines(t *testing.T) {
	rdb, h := hookedClient(t)
	c := New(rdb, nil)
	prefix := redistest.Prefix(t)
	lockUnlockLoad(t, c, prefix, 32, 50)
	if h.pipelines.Load() == 0 || h.largest.Load() < 2 {
		t.Fatalf("32 goroutines sent %d pipelines, largest %d: calls were not batched", h.pipelines.Load(), h.largest.Load())
	}
	if n := h.retryable.Load(); n != 0 {
		t.Fatalf("%d batched commands allow go-redis to replay their pipeline", n)
	}
	// Every lock ended free: each acquire and release ran exactly once.
	keys, err := rdb.Keys(t.Context(), prefix+"lock:*").Result()
	if err != nil || len(keys) != 0 {
		t.Fatalf("locks left behind: %v, %v", keys, err)
	}
	// The last flusher exits right after answering its calls.
	for i := 0; ; i++ { // bounded: up to ~10 s
		c.batch.mu.Lock()
		inFlight, queued := c.batch.plain.inFlight, len(c.batch.plain.queue)
		c.batch.mu.Unlock()
		if inFlight == 0 && queued == 0 {
			break
		}
		if i == 10000 {
			t.Fatalf("batcher not idle after the load: %d in flight, %d queued", inFlight, queued)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestBatchOffSendsEveryCallAlone(t *testing.T) {
	rdb, h := hookedClient(t)
	c := New(rdb, &Options{NoBatching: true, NoRegistry: true})
	lockUnlockLoad(t, c, redistest.Prefix(t), 16, 20)
	if n := h.pipelines.Load(); n != 0 {
		t.Fatalf("NoBatching client sent %d pipelines", n)
	}
}

// TestBatchAnswersEachCall sends one batch holding a call that succeeds, a
// call that fails (WRONGTYPE) and a bucket decision, after SCRIPT FLUSH:
// every call gets its own reply, and the scripts are loaded again.
func TestBatchAnswersEachCall(t *testing.T) {
	rdb := redistest.NewClient(t, redistest.StartT(t)) // SCRIPT FLUSH must not disturb other tests
	ctx := t.Context()
	c := New(rdb, nil)
	ok := c.NewLock("batch:ok", nil)
	bad := c.NewLock("batch:string", nil)
	if err := rdb.Set(ctx, "batch:string", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	b := c.NewTokenBucket("batch:bucket", nil)
	if err := b.TrySetRate(ctx, TokenBucketConfig{Capacity: 5, IntervalMS: 1000, Initial: 5}); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	calls := []*batchCall{
		{ctx: ctx, p: &ok.tryCall, done: make(chan struct{})},
		{ctx: ctx, p: &bad.tryCall, done: make(chan struct{})},
		{ctx: ctx, p: &b.one, done: make(chan struct{})},
	}
	c.batch.send(calls)
	for i, call := range calls {
		select {
		case <-call.done:
		default:
			t.Fatalf("call %d not answered", i)
		}
	}
	if _, taken, _, err := acquireReply(calls[0].cmd); !taken {
		t.Fatalf("lock acquire: %v, %v, want the free lock taken (\"OK\")", calls[0].cmd.Val(), err)
	}
	if err := calls[1].cmd.Err(); !isWrongType(err) {
		t.Fatalf("acquire on a string: %v, want WRONGTYPE", err)
	}
	reply, err := calls[2].cmd.Slice()
	if err != nil {
		t.Fatal(err)
	}
	if res, err := parseAcquireReply(reply); err != nil || res.Code != BucketSuccess || res.Remaining != 4 {
		t.Fatalf("bucket decision: %+v, %v; want success with 4 left", res, err)
	}
	if n, err := rdb.HGet(ctx, "batch:ok", ok.HolderID()).Int64(); err != nil || n != 1 {
		t.Fatalf("lock count %d, %v: want 1 (the acquire ran once)", n, err)
	}
}

// TestBatchCallerContextBoundsItsWait queues a call behind a full set of
// in-flight slots: its ctx ending returns at once, and the batch later
// leaves it out; a live queued call is answered once a slot frees.
func TestBatchCallerContextBoundsItsWait(t *testing.T) {
	rdb, h, c := busyBatcher(t)
	prefix := redistest.Prefix(t)
	bt := c.batch

	gone := c.NewLock(prefix+"gone", nil)
	ctx, cancel := context.WithCancel(t.Context())
	got := make(chan error, 1)
	go func() { got <- bt.run(ctx, &gone.tryCall).Err() }()
	waitQueued(t, bt, 1)
	cancel()
	select {
	case err := <-got:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("queued call after cancel: %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a queued call did not return when its ctx ended")
	}

	live := c.NewLock(prefix+"live", nil)
	done := make(chan error, 1)
	go func() { done <- live.TryLock(t.Context()) }()
	waitQueued(t, bt, 2)
	bt.done(&bt.plain) // a slot frees: the queue goes out as one batch
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("queued TryLock: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a queued call was never sent")
	}
	if h.largest.Load() != 1 {
		t.Fatalf("largest batch %d, want 1: the cancelled call must be left out", h.largest.Load())
	}
	if n, _ := rdb.Exists(t.Context(), prefix+"gone").Result(); n != 0 {
		t.Fatal("the cancelled call ran")
	}
	// The batch answers its callers before it gives its slot back.
	redistest.Eventually(t, "the flushed batch gives its slot back", func() bool {
		bt.mu.Lock()
		defer bt.mu.Unlock()
		return bt.plain.inFlight == maxInFlight-1
	})
	_ = live.Unlock(t.Context())
}

// busyBatcher is a Client on a hooked client whose batcher has every
// in-flight slot taken, as if calls were on the wire: its calls queue until
// the test frees a slot (batcher.done).
func busyBatcher(t *testing.T) (*redis.Client, *pipeHook, *Client) {
	rdb, h := hookedClient(t)
	c := New(rdb, nil)
	c.batch.mu.Lock()
	c.batch.plain.inFlight = maxInFlight
	c.batch.mu.Unlock()
	return rdb, h, c
}

func waitQueued(t *testing.T, bt *batcher, n int) {
	t.Helper()
	for i := 0; i < 10000; i++ { // bounded: up to ~10 s
		bt.mu.Lock()
		q := len(bt.plain.queue)
		bt.mu.Unlock()
		if q >= n {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("queue never reached %d calls", n)
}

// A flusher that answers a batch lets the callers it woke run before it
// looks at the queue again, so a caller that calls again at once (Unlock
// after TryLock) joins the next batch instead of going out alone. With one
// P the order is fixed: without the yield the flusher finds the queue
// empty, gives its slot back, and the first Unlock is sent on its own,
// every time. With it, the scheduler's own fairness check (it takes the
// global run queue, where the yield put the flusher, every 61st schedule)
// can still run the flusher before the last caller about 1 time in 20, so
// the case gets three tries.
func TestBatchAnsweredCallersJoinTheNextBatch(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var singles int64
	for try := 0; try < 3; try++ {
		if singles = answeredCallersOnce(t); singles == 0 {
			return
		}
	}
	t.Fatalf("%d script calls went out alone, want every Unlock in a batch", singles)
}

// answeredCallersOnce answers 4 TryLocks in one batch; each caller then
// calls Unlock at once. It returns how many lock scripts went out alone.
func answeredCallersOnce(t *testing.T) int64 {
	_, h, c := busyBatcher(t)
	prefix := redistest.Prefix(t)
	bt := c.batch

	const callers = 4
	errs := make(chan error, callers)
	for i := 0; i < callers; i++ {
		l := c.NewLock(fmt.Sprintf("%sl%d", prefix, i), &LockOptions{NoWatchdog: true, Lease: time.Minute})
		go func() {
			if err := l.TryLock(t.Context()); err != nil {
				errs <- err
				return
			}
			errs <- l.Unlock(t.Context())
		}()
	}
	waitQueued(t, bt, callers)
	bt.done(&bt.plain) // a slot frees: the TryLocks go out as one batch
	for i := 0; i < callers; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if h.largest.Load() != callers {
		t.Fatalf("largest batch %d, want the %d TryLocks in one", h.largest.Load(), callers)
	}
	return h.singles.Load()
}

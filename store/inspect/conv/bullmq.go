package conv

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// BullMQJobLock is BullMQ's lock on an active job: string
// "<prefix>:<queue>:<jobId>:lock" (prefix "bull" by default) set with SET
// PX lockDuration to the worker's token "<worker uuid>:<n>" when the job
// moves to active, renewed while the worker runs it and deleted when it
// finishes. The job's hash "<prefix>:<queue>:<jobId>" has its name,
// processedOn (ms) and pb (the worker's name). A job whose lock is gone
// while active is found stalled by the queue's stalled-job check and moved
// back to wait (or failed after maxStalledCount).
const BullMQJobLock = "bullmq-job-lock"

var bullmqConvention = &Convention{
	kind: BullMQJobLock, keyType: "string",
	claims: func(_ Config, name string) bool {
		job, ok := strings.CutSuffix(name, ":lock")
		return ok && strings.Count(job, ":") >= 2
	},
	parse: func(_ Config, k Key) (Found, bool) {
		worker, n, ok := strings.Cut(k.Value, ":")
		if !ok || !wire.IsUUID(worker) || !isDigits(n) || k.PTTL <= 0 {
			return Found{}, false
		}
		job := strings.TrimSuffix(k.Name, ":lock")
		i := strings.LastIndexByte(job, ':')
		facts := map[string]string{FactWorker: worker, FactJob: job[i+1:], FactQueue: job[:i]}
		return Found{Lock: stringLock(k, BullMQJobLock,
			"BullMQ: key <prefix>:<queue>:<job>:lock with a lease, value <worker uuid>:<n>, and the job's hash <prefix>:<queue>:<job> that began processing", facts)}, true
	},
	// The job's hash confirms the lock: a string of the same shape beside
	// no job (a Redisson-like holder id under a name ending in ":lock") is
	// not BullMQ's.
	side: func(ctx context.Context, pipe redis.Pipeliner, name string) func() (map[string]string, int64, bool) {
		job := pipe.HMGet(ctx, strings.TrimSuffix(name, ":lock"), "name", "processedOn", "pb", "ats")
		return func() (map[string]string, int64, bool) {
			vals, err := job.Result()
			if err != nil || len(vals) != 4 || vals[1] == nil {
				return nil, 0, false // no job hash that began processing: not a BullMQ lock
			}
			facts, since := map[string]string{}, int64(0)
			if s, ok := vals[0].(string); ok && s != "" {
				facts["job_name"] = s
			}
			if s, ok := vals[1].(string); ok {
				if ms, err := strconv.ParseInt(s, 10, 64); err == nil && ms > 0 {
					facts[FactSince], since = rfc3339(ms), ms
				}
			}
			if s, ok := vals[2].(string); ok && s != "" {
				facts["worker_name"] = s
			}
			if s, ok := vals[3].(string); ok && s != "" {
				facts["attempts"] = s
			}
			return facts, since, true
		}
	},
	release: func(ctx context.Context, rdb redis.UniversalClient, _ Config, t Target) (int64, error) {
		return code(convCompareDelete.Run(ctx, rdb, []string{t.Name}, t.Holder))
	},
	plan: func(t Target) Plan {
		return Plan{Deletes: []string{t.Name},
			Summary: fmt.Sprintf("deletes %q if its token is still %s; the job stays active until the queue's stalled-job check finds it without a lock and moves it back to wait (or fails it after maxStalledCount): it will be retried as stalled, and the worker still running it can no longer complete it", t.Name, t.Holder)}
	},
}

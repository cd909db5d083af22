package inspect

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// KindBullMQJobLock is BullMQ's lock on an active job: string
// "<prefix>:<queue>:<jobId>:lock" (prefix "bull" by default) set with SET
// PX lockDuration to the worker's token "<worker uuid>:<n>" when the job
// moves to active, renewed while the worker runs it and deleted when it
// finishes. The job's hash "<prefix>:<queue>:<jobId>" has its name,
// processedOn (ms) and pb (the worker's name). A job whose lock is gone
// while active is found stalled by the queue's stalled-job check and moved
// back to wait (or failed after maxStalledCount).
const KindBullMQJobLock Kind = "bullmq-job-lock"

var bullmqConvention = &convention{
	kind: KindBullMQJobLock, keyType: "string",
	claims: func(_ ObjectPatterns, name string) bool {
		job, ok := strings.CutSuffix(name, ":lock")
		return ok && strings.Count(job, ":") >= 2
	},
	parse: func(_ ObjectPatterns, k convKey) (convFound, bool) {
		worker, n, ok := strings.Cut(k.value, ":")
		if !ok || !isUUID(worker) || !isDigits(n) || k.pttl <= 0 {
			return convFound{}, false
		}
		job := strings.TrimSuffix(k.name, ":lock")
		i := strings.LastIndexByte(job, ':')
		facts := map[string]string{FactWorker: worker, FactJob: job[i+1:], FactQueue: job[:i]}
		return convFound{lock: stringLock(k, KindBullMQJobLock,
			"BullMQ: key <prefix>:<queue>:<job>:lock with a lease, value <worker uuid>:<n>, and the job's hash <prefix>:<queue>:<job> that began processing", facts)}, true
	},
	// The job's hash confirms the lock: a string of the same shape beside
	// no job (a Redisson-like holder id under a name ending in ":lock") is
	// not BullMQ's.
	side: func(ctx context.Context, pipe redis.Pipeliner, name string) func(*convFound) {
		job := pipe.HMGet(ctx, strings.TrimSuffix(name, ":lock"), "name", "processedOn", "pb", "ats")
		return func(f *convFound) {
			if f.lock == nil || f.lock.Kind != KindBullMQJobLock {
				return
			}
			vals, err := job.Result()
			if err != nil || len(vals) != 4 || vals[1] == nil {
				f.lock = nil // no job hash that began processing: not a BullMQ lock
				return
			}
			h := &f.lock.Holders[0]
			if s, ok := vals[0].(string); ok && s != "" {
				h.Facts["job_name"] = s
			}
			if s, ok := vals[1].(string); ok {
				if ms, err := strconv.ParseInt(s, 10, 64); err == nil && ms > 0 {
					h.Facts[FactSince], h.AcquiredMS = rfc3339(ms), ms
				}
			}
			if s, ok := vals[2].(string); ok && s != "" {
				h.Facts["worker_name"] = s
			}
			if s, ok := vals[3].(string); ok && s != "" {
				h.Facts["attempts"] = s
			}
		}
	},
	release: func(ctx context.Context, c *Inspector, l *LockInfo, holder string) (int64, error) {
		return scriptCode(convCompareDelete.Run(ctx, c.rdb, []string{l.Name}, holder))
	},
	plan: func(l *LockInfo, holder string) ForceUnlockPlan {
		return ForceUnlockPlan{Deletes: []string{l.Name},
			Summary: fmt.Sprintf("deletes %q if its token is still %s; the job stays active until the queue's stalled-job check finds it without a lock and moves it back to wait (or fails it after maxStalledCount): it will be retried as stalled, and the worker still running it can no longer complete it", l.Name, holder)}
	},
}

// isDigits reports whether s is one or more ASCII digits.
func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

package inspect

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/lockwarden/lockwarden/luascripts"
	"github.com/lockwarden/lockwarden/store"
)

// KindSidekiqUniqueJob is sidekiq-unique-jobs: hash "<digest>:LOCKED"
// (digest "uniquejobs:<md5>", ":RUN" appended for the while-executing
// half) of job id (24 hex digits) -> the time it locked (epoch seconds,
// v7 and v8) or its metadata as JSON (worker, queue, ttl, type, time; v9).
// The digest is also a member of the ZSET "uniquejobs:digests" (or
// "uniquejobs:expiring_digests" for until_expired locks); v7/v8 keep the
// digest string, "<digest>:INFO" and the waiters' lists
// "<digest>:QUEUED" / ":PRIMED" beside it.
const KindSidekiqUniqueJob Kind = "sidekiq-unique-job"

const (
	sidekiqDigests  = "uniquejobs:digests"
	sidekiqExpiring = "uniquejobs:expiring_digests"
)

var sidekiqRelease = store.NewScript(luascripts.Source("sidekiq_force_release"))

var sidekiqConvention = &convention{
	kind: KindSidekiqUniqueJob, keyType: "hash",
	parse: parseSidekiq,
	release: func(ctx context.Context, c *Inspector, l *LockInfo, holder string) (int64, error) {
		digest := strings.TrimSuffix(l.Name, ":LOCKED")
		v8 := "0"
		for _, h := range l.Holders {
			if h.ID == holder && h.Facts[FactLayout] == sidekiqV8 {
				v8 = "1"
			}
		}
		keys := []string{l.Name, sidekiqDigests, sidekiqExpiring, digest, digest + ":INFO", digest + ":QUEUED", digest + ":PRIMED"}
		return scriptCode(sidekiqRelease.Run(ctx, c.rdb, keys, holder, digest, v8))
	},
	plan: func(l *LockInfo, holder string) ForceUnlockPlan {
		digest := strings.TrimSuffix(l.Name, ":LOCKED")
		p := ForceUnlockPlan{RemovesField: holder,
			Summary: fmt.Sprintf("removes job %s from %q as sidekiq-unique-jobs' unlock does, and once no job holds it deletes the hash and removes %s from %s and %s, so the next job with this digest is accepted", holder, l.Name, digest, sidekiqDigests, sidekiqExpiring)}
		if len(l.Holders) <= 1 {
			p.RemovesField, p.Deletes = "", []string{l.Name}
		}
		return p
	},
}

const (
	sidekiqV8 = "v7/v8 (job id -> lock time)"
	sidekiqV9 = "v9 (job id -> JSON metadata)"
)

func parseSidekiq(_ ObjectPatterns, k convKey) (convFound, bool) {
	digest, ok := strings.CutSuffix(k.name, ":LOCKED")
	if !ok || !strings.Contains(digest, ":") || k.pttl == -2 {
		return convFound{}, false
	}
	l := &LockInfo{Name: k.name, Kind: KindSidekiqUniqueJob, PTTL: k.pttl,
		Recognised: "sidekiq-unique-jobs: hash <digest>:LOCKED of job ids (24 hex digits) with their lock time or metadata"}
	for jid, v := range k.fields {
		if len(jid) != 24 || !isHex(jid) {
			return convFound{}, false
		}
		facts := map[string]string{FactJob: jid}
		h := Holder{ID: jid, Count: 1, Facts: facts}
		if secs, err := strconv.ParseFloat(v, 64); err == nil && secs > 0 && !math.IsInf(secs, 0) {
			facts[FactLayout] = sidekiqV8
			h.AcquiredMS = int64(secs * 1000)
		} else {
			var meta struct {
				Worker string   `json:"worker"`
				Queue  string   `json:"queue"`
				Type   string   `json:"type"`
				TTL    *float64 `json:"ttl"`
				Time   float64  `json:"time"`
			}
			if json.Unmarshal([]byte(v), &meta) != nil || meta.Time <= 0 {
				return convFound{}, false
			}
			facts[FactLayout] = sidekiqV9
			h.AcquiredMS = int64(meta.Time * 1000)
			if meta.Worker != "" {
				facts[FactWorker] = meta.Worker
			}
			if meta.Queue != "" {
				facts[FactQueue] = meta.Queue
			}
			if meta.Type != "" {
				facts["lock_type"] = meta.Type
			}
		}
		facts[FactSince] = rfc3339(h.AcquiredMS)
		l.Holders = append(l.Holders, h)
	}
	if len(l.Holders) == 0 {
		return convFound{}, false
	}
	sortHolders(l.Holders)
	return convFound{lock: l}, true
}

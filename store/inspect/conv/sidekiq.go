package conv

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/lockwarden/lockwarden/luascripts"
	"github.com/lockwarden/lockwarden/store"
	"github.com/redis/go-redis/v9"
)

// SidekiqUniqueJob is sidekiq-unique-jobs: hash "<digest>:LOCKED"
// (digest "uniquejobs:<md5>", ":RUN" appended for the while-executing
// half) of job id (24 hex digits) -> the time it locked (epoch seconds,
// v7 and v8) or its metadata as JSON (worker, queue, ttl, type, time; v9).
// The digest is also a member of the ZSET "uniquejobs:digests" (or
// "uniquejobs:expiring_digests" for until_expired locks); v7/v8 keep the
// digest string, "<digest>:INFO" and the waiters' lists
// "<digest>:QUEUED" / ":PRIMED" beside it.
const SidekiqUniqueJob = "sidekiq-unique-job"

const (
	sidekiqDigests  = "uniquejobs:digests"
	sidekiqExpiring = "uniquejobs:expiring_digests"
)

var sidekiqRelease = store.NewScript(luascripts.Source("sidekiq_force_release"))

var sidekiqConvention = &Convention{
	kind: SidekiqUniqueJob, keyType: "hash",
	parse: parseSidekiq,
	release: func(ctx context.Context, rdb redis.UniversalClient, _ Config, t Target) (int64, error) {
		digest := strings.TrimSuffix(t.Name, ":LOCKED")
		v8 := "0"
		if t.Facts[FactLayout] == sidekiqV8 {
			v8 = "1"
		}
		keys := []string{t.Name, sidekiqDigests, sidekiqExpiring, digest, digest + ":INFO", digest + ":QUEUED", digest + ":PRIMED"}
		return code(sidekiqRelease.Run(ctx, rdb, keys, t.Holder, digest, v8))
	},
	plan: func(t Target) Plan {
		digest := strings.TrimSuffix(t.Name, ":LOCKED")
		p := Plan{RemovesField: t.Holder,
			Summary: fmt.Sprintf("removes job %s from %q as sidekiq-unique-jobs' unlock does, and once no job holds it deletes the hash and removes %s from %s and %s, so the next job with this digest is accepted", t.Holder, t.Name, digest, sidekiqDigests, sidekiqExpiring)}
		if t.Holders <= 1 {
			p.RemovesField, p.Deletes = "", []string{t.Name}
		}
		return p
	},
}

const (
	sidekiqV8 = "v7/v8 (job id -> lock time)"
	sidekiqV9 = "v9 (job id -> JSON metadata)"
)

func parseSidekiq(_ Config, k Key) (Found, bool) {
	digest, ok := strings.CutSuffix(k.Name, ":LOCKED")
	if !ok || !strings.Contains(digest, ":") || k.PTTL == -2 {
		return Found{}, false
	}
	l := &Lock{Name: k.Name, Kind: SidekiqUniqueJob, PTTL: k.PTTL,
		Recognised: "sidekiq-unique-jobs: hash <digest>:LOCKED of job ids (24 hex digits) with their lock time or metadata"}
	for jid, v := range k.Fields {
		if len(jid) != 24 || !isHex(jid) {
			return Found{}, false
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
				return Found{}, false
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
		return Found{}, false
	}
	sortHolders(l.Holders)
	return Found{Lock: l}, true
}

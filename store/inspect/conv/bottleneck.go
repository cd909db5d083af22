package conv

import (
	"context"
	"strconv"
	"strings"

	"github.com/lockwarden/lockwarden/luascripts"
	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect/internal/num"
	"github.com/redis/go-redis/v9"
)

// Bottleneck is bottleneck's Redis datastore (a clustered limiter):
// hash "b_<id>_settings" with its settings (maxConcurrent, minTime,
// reservoir, reservoirRefreshInterval and reservoirRefreshAmount, ...) and
// state (running, done, nextRequest, version, id), beside
// "b_<id>_job_*" and "b_<id>_client_*". Every change of capacity is
// published on "b_<id>" as "capacity:<n>", which sends the clients' queued
// jobs to try again.
const Bottleneck = "bottleneck"

var bottleneckReset = store.NewScript(luascripts.Source("bottleneck_reset"))

// bottleneckID is the id in "b_<id>_settings".
func bottleneckID(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "b_")
	id, ok2 := strings.CutSuffix(rest, "_settings")
	return id, ok && ok2 && id != ""
}

var bottleneckConvention = &Convention{
	kind: Bottleneck, limiter: true, keyType: "hash",
	parse: func(_ Config, k Key) (Found, bool) {
		id, ok := bottleneckID(k.Name)
		f := k.Fields
		_, hasRunning := f["running"]
		_, hasNext := f["nextRequest"]
		if !ok || f["id"] != id || f["version"] == "" || !hasRunning || !hasNext {
			return Found{}, false
		}
		running, _ := strconv.ParseInt(f["running"], 10, 64)
		lim := &Limiter{Name: k.Name, Kind: Bottleneck, RejectionsHidden: true,
			Recognised: "bottleneck: hash b_<id>_settings holding its own id, version, running and nextRequest",
			Facts:      map[string]string{FactRunning: f["running"], "version": f["version"], "channel": "b_" + id}}
		for _, name := range []string{"maxConcurrent", "minTime", "reservoir", "reservoirRefreshInterval", "reservoirRefreshAmount", "done"} {
			if v := f[name]; v != "" {
				lim.Facts[name] = v
			}
		}
		maxConc, concOK := num.CanonicalInt(f["maxConcurrent"])
		reservoir, resOK := num.CanonicalInt(f["reservoir"])
		amount, amountOK := num.CanonicalInt(f["reservoirRefreshAmount"])
		interval, intervalOK := num.Finite(f["reservoirRefreshInterval"])
		switch {
		case amountOK && intervalOK && interval > 0:
			lim.Rate, lim.IntervalMS, lim.PerSecond = amount, interval, float64(amount)*1000/interval
		case concOK:
			lim.Rate = maxConc
		}
		switch {
		case resOK && concOK:
			lim.Available = max(0, min(reservoir, maxConc-running))
		case resOK:
			lim.Available = max(0, reservoir)
		case concOK:
			lim.Available = max(0, maxConc-running)
		default:
			lim.AvailableUnknown = true // unlimited
		}
		return Found{Limiter: lim}, true
	},
	reset: func(ctx context.Context, rdb redis.UniversalClient, name string) (int64, error) {
		id, _ := bottleneckID(name)
		n, err := code(bottleneckReset.Run(ctx, rdb, []string{name}, id))
		if err == nil && n > 0 {
			n = 1
		}
		return n, err
	},
}

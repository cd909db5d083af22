package inspect

import (
	"context"
	"strconv"
	"strings"

	"github.com/lockwarden/lockwarden/luascripts"
	"github.com/lockwarden/lockwarden/store"
)

// KindBottleneck is bottleneck's Redis datastore (a clustered limiter):
// hash "b_<id>_settings" with its settings (maxConcurrent, minTime,
// reservoir, reservoirRefreshInterval and reservoirRefreshAmount, ...) and
// state (running, done, nextRequest, version, id), beside
// "b_<id>_job_*" and "b_<id>_client_*". Every change of capacity is
// published on "b_<id>" as "capacity:<n>", which sends the clients' queued
// jobs to try again.
const KindBottleneck Kind = "bottleneck"

var bottleneckReset = store.NewScript(luascripts.Source("bottleneck_reset"))

// bottleneckID is the id in "b_<id>_settings".
func bottleneckID(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "b_")
	id, ok2 := strings.CutSuffix(rest, "_settings")
	return id, ok && ok2 && id != ""
}

var bottleneckConvention = &convention{
	kind: KindBottleneck, limiter: true, keyType: "hash",
	parse: func(_ ObjectPatterns, k convKey) (convFound, bool) {
		id, ok := bottleneckID(k.name)
		f := k.fields
		_, hasRunning := f["running"]
		_, hasNext := f["nextRequest"]
		if !ok || f["id"] != id || f["version"] == "" || !hasRunning || !hasNext {
			return convFound{}, false
		}
		running, _ := strconv.ParseInt(f["running"], 10, 64)
		lim := &LimiterInfo{Name: k.name, Kind: KindBottleneck, RejectionsHidden: true,
			Recognised: "bottleneck: hash b_<id>_settings holding its own id, version, running and nextRequest",
			Facts:      map[string]string{FactRunning: f["running"], "version": f["version"], "channel": "b_" + id}}
		for _, name := range []string{"maxConcurrent", "minTime", "reservoir", "reservoirRefreshInterval", "reservoirRefreshAmount", "done"} {
			if v := f[name]; v != "" {
				lim.Facts[name] = v
			}
		}
		maxConc, concOK := parseCanonicalInt(f["maxConcurrent"])
		reservoir, resOK := parseCanonicalInt(f["reservoir"])
		amount, amountOK := parseCanonicalInt(f["reservoirRefreshAmount"])
		interval, intervalOK := parseFinite(f["reservoirRefreshInterval"])
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
		return convFound{lim: lim}, true
	},
	reset: func(ctx context.Context, c *Inspector, l *LimiterInfo) (int64, error) {
		id, _ := bottleneckID(l.Name)
		n, err := scriptCode(bottleneckReset.Run(ctx, c.rdb, []string{l.Name}, id))
		if err == nil && n > 0 {
			n = 1
		}
		return n, err
	},
}

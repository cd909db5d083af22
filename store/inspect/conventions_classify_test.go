package inspect

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Each convention's parse on values its library writes and on look-alikes
// an application might keep under the same name: the look-alikes are never
// that convention.
func TestConventionParsers(t *testing.T) {
	const now = int64(1_790_000_000_000)
	uuid := "9b2d6f4e-1c3a-4e5b-8f7d-0a1b2c3d4e5f"
	str := func(name, value string, pttl time.Duration) convKey {
		return convKey{name: name, value: value, pttl: pttl, nowMS: now}
	}
	p := ObjectPatterns{SpringRegistries: []string{"reg"}, DotnetLocks: []string{"dist:*"}}
	cases := []struct {
		desc string
		k    convKey
		typ  string
		want Kind // "" for none
	}{
		{"shedlock", str("job-lock:default:report", "ADDED:2026-09-01T10:00:00.123Z@host-1:"+uuid, time.Minute), "string", KindShedLock},
		{"shedlock before 6.7", str("job-lock:default:report", "ADDED:2026-09-01T10:00:00.123Z@host-1", time.Minute), "string", KindShedLock},
		{"shedlock bad time", str("job-lock:default:report", "ADDED:yesterday@host-1", time.Minute), "string", ""},
		{"shedlock no host", str("job-lock:default:report", "ADDED:2026-09-01T10:00:00.123Z@", time.Minute), "string", ""},
		{"shedlock name without env", str("job-lock:report", "ADDED:2026-09-01T10:00:00.123Z@h", time.Minute), "string", ""},
		{"python-redis-lock", str("lock:x", "QUJDREVGR0hJSktMTU5PUFFS", -1), "string", KindPyRedisLock},
		{"python-redis-lock id of another length", str("lock:x", "QUJDREVGR0hJSktM", -1), "string", ""},
		{"python-redis-lock cached text", str("lock:x", "this is 24 chars of text", -1), "string", ""},
		{"bullmq", str("bull:mail:1:lock", uuid+":12", time.Minute), "string", KindBullMQJobLock},
		{"bullmq token not a uuid", str("bull:mail:1:lock", "worker-1:12", time.Minute), "string", ""},
		{"bullmq without lease", str("bull:mail:1:lock", uuid+":12", -1), "string", ""},
		{"spring", str("reg:orders", uuid, time.Minute), "string", KindSpringLock},
		{"spring other registry", str("other:orders", uuid, time.Minute), "string", ""},
		{"dotnet", str("dist:pay", "HOST_12_0123456789abcdef0123456789abcdef", time.Minute), "string", KindDotnetLock},
		{"dotnet short guid", str("dist:pay", "HOST_12_0123", time.Minute), "string", ""},
		{"laravel lock", str("laravel-database-laravel-cache-invoices", "aZ3kLm9QwErTyUi0", time.Minute), "string", KindLaravelLock},
		{"laravel 10 lock", str("laravel_database_laravel_cache:invoices", "aZ3kLm9QwErTyUi0", time.Minute), "string", KindLaravelLock},
		{"laravel cached number", str("laravel-database-laravel-cache-visits", "1234567890123456", time.Minute), "string", ""},
		{"laravel serialized string", str("laravel-database-laravel-cache-name", `s:4:"Jane";`, time.Minute), "string", ""},
		{"laravel slugs differ", str("shop-database-blog-cache-invoices", "aZ3kLm9QwErTyUi0", time.Minute), "string", ""},
		{"laravel funnel slot", str("laravel-database-imports3", "aZ3kLm9QwErTyUi0pQ12", time.Minute), "string", KindLaravelLock},
		{"express", str("rl:10.0.0.1", "4", time.Minute), "string", KindExpressRateLimit},
		{"express no expiry", str("rl:10.0.0.1", "4", -1), "string", ""},
		{"express text", str("rl:config", "on", time.Minute), "string", ""},
		{"upstash fixed", str("@upstash/ratelimit:u1:"+clsItoa(now/60000), "3", time.Minute), "string", KindUpstashRatelimit},
		{"upstash dynamic limit", str("@upstash/ratelimit:dynamic:global", "100", -1), "string", ""},
		{"envoy minute", str("edge_remote_address_1.2.3.4_"+clsItoa(now/1000/60*60), "5", 70*time.Second), "string", KindEnvoyRatelimit},
		{"envoy text", str("edge_remote_address_1.2.3.4_"+clsItoa(now/1000/60*60), "x", 70*time.Second), "string", ""},
		{"envoy window long over", str("edge_remote_address_1.2.3.4_"+clsItoa(now/1000/60*60-7200), "5", 70*time.Second), "string", ""},
		{"sidekiq v8", convKey{name: "uniquejobs:abc:LOCKED", fields: map[string]string{"0123456789abcdef01234567": "1790000000.5"}, pttl: -1}, "hash", KindSidekiqUniqueJob},
		{"sidekiq v9", convKey{name: "uniquejobs:abc:LOCKED", fields: map[string]string{"0123456789abcdef01234567": `{"worker":"W","queue":"q","time":1790000000.5}`}, pttl: -1}, "hash", KindSidekiqUniqueJob},
		{"sidekiq field not a jid", convKey{name: "uniquejobs:abc:LOCKED", fields: map[string]string{"user": "1"}, pttl: -1}, "hash", ""},
		{"laravel throttle", convKey{name: "api", fields: map[string]string{"start": "1790000000", "end": "1790000060", "count": "3"}, pttl: time.Minute, nowMS: now}, "hash", KindLaravelThrottle},
		{"laravel throttle extra field", convKey{name: "api", fields: map[string]string{"start": "1", "end": "60", "count": "3", "x": "1"}, pttl: time.Minute, nowMS: now}, "hash", ""},
		{"bottleneck", convKey{name: "b_mail_settings", fields: map[string]string{"id": "mail", "version": "2.19.5", "running": "0", "nextRequest": "1", "reservoir": "2", "maxConcurrent": ""}, pttl: -1, nowMS: now}, "hash", KindBottleneck},
		{"bottleneck other id", convKey{name: "b_mail_settings", fields: map[string]string{"id": "sms", "version": "2.19.5", "running": "0", "nextRequest": "1"}, pttl: -1, nowMS: now}, "hash", ""},
		{"symfony", convKey{name: "r", members: []redis.Z{{Score: float64(now + 300000), Member: strings.Repeat("A", 43) + "="}, {Score: float64(now + 300000), Member: "__write__"}}, card: 2, pttl: time.Minute, nowMS: now}, "zset", KindSymfonyLock},
		{"symfony two writers", convKey{name: "r", members: []redis.Z{{Score: float64(now), Member: strings.Repeat("A", 43) + "="}, {Score: float64(now), Member: strings.Repeat("B", 43) + "="}, {Score: float64(now), Member: "__write__"}}, card: 3, pttl: time.Minute, nowMS: now}, "zset", ""},
		{"a leaderboard", convKey{name: "r", members: []redis.Z{{Score: 12, Member: "player-1"}}, card: 1, pttl: -1, nowMS: now}, "zset", ""},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			f, ok := classifyConvention(p, tc.typ, tc.k)
			var got Kind
			if ok && f.lock != nil {
				got = f.lock.Kind
			} else if ok && f.lim != nil {
				got = f.lim.Kind
			}
			if got != tc.want {
				t.Fatalf("%s %q = %q (%+v), want %q", tc.typ, tc.k.name, got, f, tc.want)
			}
		})
	}
}

// Upstash's window length comes from the window number and Redis time.
func TestUpstashWindow(t *testing.T) {
	now := int64(1_790_000_123_456)
	for _, w := range []int64{1000, 10000, 60000, 3600000, 86400000} {
		for _, n := range []int64{now / w, now/w - 1} {
			if got := upstashWindow(now, n); got != w {
				t.Errorf("window %d ms, number %d: %d", w, n, got)
			}
		}
	}
}

package conv

import (
	"strconv"
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
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	uuid := "9b2d6f4e-1c3a-4e5b-8f7d-0a1b2c3d4e5f"
	str := func(name, value string, pttl time.Duration) Key {
		return Key{Name: name, Value: value, PTTL: pttl, NowMS: now}
	}
	p := Config{SpringRegistries: []string{"reg"}, DotnetLocks: []string{"dist:*"}}
	cases := []struct {
		desc string
		k    Key
		typ  string
		want string // "" for none
	}{
		{"shedlock", str("job-lock:default:report", "ADDED:2026-09-01T10:00:00.123Z@host-1:"+uuid, time.Minute), "string", ShedLock},
		{"shedlock before 6.7", str("job-lock:default:report", "ADDED:2026-09-01T10:00:00.123Z@host-1", time.Minute), "string", ShedLock},
		{"shedlock bad time", str("job-lock:default:report", "ADDED:yesterday@host-1", time.Minute), "string", ""},
		{"shedlock no host", str("job-lock:default:report", "ADDED:2026-09-01T10:00:00.123Z@", time.Minute), "string", ""},
		{"shedlock name without env", str("job-lock:report", "ADDED:2026-09-01T10:00:00.123Z@h", time.Minute), "string", ""},
		{"python-redis-lock", str("lock:x", "QUJDREVGR0hJSktMTU5PUFFS", -1), "string", PyRedisLock},
		{"python-redis-lock id of another length", str("lock:x", "QUJDREVGR0hJSktM", -1), "string", ""},
		{"python-redis-lock cached text", str("lock:x", "this is 24 chars of text", -1), "string", ""},
		{"bullmq", str("bull:mail:1:lock", uuid+":12", time.Minute), "string", BullMQJobLock},
		{"bullmq token not a uuid", str("bull:mail:1:lock", "worker-1:12", time.Minute), "string", ""},
		{"bullmq without lease", str("bull:mail:1:lock", uuid+":12", -1), "string", ""},
		{"spring", str("reg:orders", uuid, time.Minute), "string", SpringLock},
		{"spring other registry", str("other:orders", uuid, time.Minute), "string", ""},
		{"dotnet", str("dist:pay", "HOST_12_0123456789abcdef0123456789abcdef", time.Minute), "string", DotnetLock},
		{"dotnet short guid", str("dist:pay", "HOST_12_0123", time.Minute), "string", ""},
		{"laravel lock", str("laravel-database-laravel-cache-invoices", "aZ3kLm9QwErTyUi0", time.Minute), "string", LaravelLock},
		{"laravel 10 lock", str("laravel_database_laravel_cache:invoices", "aZ3kLm9QwErTyUi0", time.Minute), "string", LaravelLock},
		{"laravel cached number", str("laravel-database-laravel-cache-visits", "1234567890123456", time.Minute), "string", ""},
		{"laravel serialized string", str("laravel-database-laravel-cache-name", `s:4:"Jane";`, time.Minute), "string", ""},
		{"laravel slugs differ", str("shop-database-blog-cache-invoices", "aZ3kLm9QwErTyUi0", time.Minute), "string", ""},
		{"laravel funnel slot", str("laravel-database-imports3", "aZ3kLm9QwErTyUi0pQ12", time.Minute), "string", LaravelLock},
		{"express", str("rl:10.0.0.1", "4", time.Minute), "string", ExpressRateLimit},
		{"express no expiry", str("rl:10.0.0.1", "4", -1), "string", ""},
		{"express text", str("rl:config", "on", time.Minute), "string", ""},
		{"upstash fixed", str("@upstash/ratelimit:u1:"+itoa(now/60000), "3", time.Minute), "string", UpstashRatelimit},
		{"upstash dynamic limit", str("@upstash/ratelimit:dynamic:global", "100", -1), "string", ""},
		{"envoy minute", str("edge_remote_address_1.2.3.4_"+itoa(now/1000/60*60), "5", 70*time.Second), "string", EnvoyRatelimit},
		{"envoy text", str("edge_remote_address_1.2.3.4_"+itoa(now/1000/60*60), "x", 70*time.Second), "string", ""},
		{"envoy window long over", str("edge_remote_address_1.2.3.4_"+itoa(now/1000/60*60-7200), "5", 70*time.Second), "string", ""},
		{"sidekiq v8", Key{Name: "uniquejobs:abc:LOCKED", Fields: map[string]string{"0123456789abcdef01234567": "1790000000.5"}, PTTL: -1}, "hash", SidekiqUniqueJob},
		{"sidekiq v9", Key{Name: "uniquejobs:abc:LOCKED", Fields: map[string]string{"0123456789abcdef01234567": `{"worker":"W","queue":"q","time":1790000000.5}`}, PTTL: -1}, "hash", SidekiqUniqueJob},
		{"sidekiq field not a jid", Key{Name: "uniquejobs:abc:LOCKED", Fields: map[string]string{"user": "1"}, PTTL: -1}, "hash", ""},
		{"laravel throttle", Key{Name: "api", Fields: map[string]string{"start": "1790000000", "end": "1790000060", "count": "3"}, PTTL: time.Minute, NowMS: now}, "hash", LaravelThrottle},
		{"laravel throttle extra field", Key{Name: "api", Fields: map[string]string{"start": "1", "end": "60", "count": "3", "x": "1"}, PTTL: time.Minute, NowMS: now}, "hash", ""},
		{"bottleneck", Key{Name: "b_mail_settings", Fields: map[string]string{"id": "mail", "version": "2.19.5", "running": "0", "nextRequest": "1", "reservoir": "2", "maxConcurrent": ""}, PTTL: -1, NowMS: now}, "hash", Bottleneck},
		{"bottleneck other id", Key{Name: "b_mail_settings", Fields: map[string]string{"id": "sms", "version": "2.19.5", "running": "0", "nextRequest": "1"}, PTTL: -1, NowMS: now}, "hash", ""},
		{"symfony", Key{Name: "r", Members: []redis.Z{{Score: float64(now + 300000), Member: strings.Repeat("A", 43) + "="}, {Score: float64(now + 300000), Member: "__write__"}}, Card: 2, PTTL: time.Minute, NowMS: now}, "zset", SymfonyLock},
		{"symfony two writers", Key{Name: "r", Members: []redis.Z{{Score: float64(now), Member: strings.Repeat("A", 43) + "="}, {Score: float64(now), Member: strings.Repeat("B", 43) + "="}, {Score: float64(now), Member: "__write__"}}, Card: 3, PTTL: time.Minute, NowMS: now}, "zset", ""},
		{"a leaderboard", Key{Name: "r", Members: []redis.Z{{Score: 12, Member: "player-1"}}, Card: 1, PTTL: -1, NowMS: now}, "zset", ""},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			f, ok := Classify(p, tc.typ, tc.k)
			var got string
			if ok && f.Lock != nil {
				got = f.Lock.Kind
			} else if ok && f.Limiter != nil {
				got = f.Limiter.Kind
			}
			if got != tc.want {
				t.Fatalf("%s %q = %q (%+v), want %q", tc.typ, tc.k.Name, got, f, tc.want)
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

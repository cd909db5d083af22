package web

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/lockwarden/lockwarden/web/auth"
)

// One private redis-server for the package; each test works under its own
// key prefix and its server only discovers that prefix.
func TestMain(m *testing.M) { redistest.Main(m) }

// testEnv is one running console over the shared Redis.
type testEnv struct {
	t      *testing.T
	srv    *Server
	rdb    *redis.Client
	app    *store.Client // an application's client, for traffic and setup
	prefix string
	http   *http.Client
}

// newEnv starts a console that sees only keys under a fresh prefix. mod
// may adjust the config before the server is built.
func newEnv(t *testing.T, mod func(*Config)) *testEnv {
	t.Helper()
	if c := redistest.SharedCluster(); c != nil {
		// LOCKWARDEN_TEST_TOPOLOGY=cluster: the console as serve builds it
		// on a Cluster (see cluster_test.go).
		return newClusterEnv(t, c, mod)
	}
	return newEnvOn(t, redistest.Client(t), mod)
}

// newEnvOn is newEnv over the Redis behind rdb (a private server).
func newEnvOn(t *testing.T, rdb *redis.Client, mod func(*Config)) *testEnv {
	t.Helper()
	prefix := redistest.Prefix(t)
	cfg := Config{
		Inspector: inspect.New(rdb, nil),
		Listen:    "127.0.0.1:0",
		Match:     prefix + "*",
		// Each test its own audit trail, so records can be counted, and
		// its own sign-in state, so one test's guessing limits no other.
		AuditKey:      "lw:{audit}:" + prefix,
		AuthNamespace: strings.TrimSuffix(prefix, ":"),
	}
	if mod != nil {
		mod(&cfg)
	}
	srv := New(cfg)
	if err := srv.Open(t.Context()); err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	t.Cleanup(func() { rdb.Del(context.Background(), cfg.AuditKey, cfg.refusedAuditKey(), cfg.signInAuditKey()) })
	t.Cleanup(func() { delAuthKeys(rdb, cfg.AuthNamespace) })
	// Lists come from the sampler's snapshot: wait for the first one.
	eventually(t, 10*time.Second, "first snapshot", func() bool { return srv.live.Latest() != nil })
	jar, _ := cookiejar.New(nil)
	// The application client stays out of the client registry, so tests
	// that count keys see only their own.
	return &testEnv{t: t, srv: srv, rdb: rdb, app: store.New(rdb, &store.Options{NoRegistry: true}), prefix: prefix, http: &http.Client{
		Jar:     jar,
		Timeout: 10 * time.Second,
		// Tests look at redirects themselves.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// synced waits until the sampler's snapshot comes from a discovery that
// started after this call, so lists show what the test wrote before it.
func (e *testEnv) synced() {
	e.t.Helper()
	since := time.Now()
	eventually(e.t, 15*time.Second, "a discovery after the test's writes", func() bool {
		sn := e.srv.live.Latest()
		return sn != nil && sn.RedisUp && !sn.Discovered.Before(since)
	})
}

const testUUID = "0f8a2c1e-7b3d-4e9f-a6c5-123456789abc"

// holderID is a holder field in Redisson's layout.
func holderID(owner string) string { return testUUID + ":" + owner }

// makeLock writes a reentrant lock the way Redisson does.
func (e *testEnv) makeLock(name, owner string, count int64, lease time.Duration) {
	e.t.Helper()
	ctx := context.Background()
	if err := e.rdb.HSet(ctx, name, holderID(owner), count).Err(); err != nil {
		e.t.Fatal(err)
	}
	if err := e.rdb.PExpire(ctx, name, lease).Err(); err != nil {
		e.t.Fatal(err)
	}
}

// makeBucket writes a token bucket in the token-bucket script's layout.
func (e *testEnv) makeBucket(name string, max int64, intervalMS string) {
	e.t.Helper()
	ctx := context.Background()
	nowMS := time.Now().UnixMilli()
	err := e.rdb.HSet(ctx, name, "last_mill_second", nowMS, "stored_permits", max,
		"max_permits", max, "interval", intervalMS, "app", "test").Err()
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { e.rdb.Del(context.Background(), name, redistest.StatsKey(name)) })
}

func (e *testEnv) hgetall(name string) map[string]string {
	e.t.Helper()
	m, err := e.rdb.HGetAll(context.Background(), name).Result()
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

// do sends a request to the console and returns status, headers and body.
func (e *testEnv) do(method, path string, body io.Reader, hdr map[string]string) (int, http.Header, []byte) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL()+path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := e.http.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// bearer marks an API call as a script's (in local mode any token passes).
var bearer = map[string]string{"Authorization": "Bearer test", "Content-Type": "application/json"}

// getJSON GETs path and decodes the JSON answer into v.
func (e *testEnv) getJSON(path string, wantStatus int, v any) {
	e.t.Helper()
	st, _, b := e.do("GET", path, nil, nil)
	if st != wantStatus {
		e.t.Fatalf("GET %s: status %d, want %d; body %s", path, st, wantStatus, b)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			e.t.Fatalf("GET %s: %v in %s", path, err, b)
		}
	}
}

// sendJSON sends body with a Bearer header and decodes the answer.
func (e *testEnv) sendJSON(method, path, body string, wantStatus int, v any) {
	e.t.Helper()
	st, _, b := e.do(method, path, strings.NewReader(body), bearer)
	if st != wantStatus {
		e.t.Fatalf("%s %s %s: status %d, want %d; body %s", method, path, body, st, wantStatus, b)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			e.t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
}

// dialWS opens a websocket to the console.
func (e *testEnv) dialWS(hdr http.Header, dialer *websocket.Dialer) (*websocket.Conn, *http.Response, error) {
	if dialer == nil {
		dialer = &websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	}
	u := "ws" + strings.TrimPrefix(e.srv.URL(), "http") + "/ws"
	return dialer.Dial(u, hdr)
}

// frame is any websocket frame, decoded loosely.
type frame map[string]any

func (f frame) typ() string { s, _ := f["type"].(string); return s }

// readFrames reads frames until stop returns true or d passes; it returns
// every frame read.
// readFrames reads until stop or d passes. A read that times out leaves a
// gorilla connection unusable, so a timed-out readFrames must be the last
// read on c.
func readFrames(t *testing.T, c *websocket.Conn, d time.Duration, stop func(frame) bool) []frame {
	t.Helper()
	deadline := time.Now().Add(d)
	var out []frame
	for i := 0; i < 100000 && time.Now().Before(deadline); i++ {
		_ = c.SetReadDeadline(deadline)
		_, b, err := c.ReadMessage()
		if err != nil {
			if ne, ok := err.(interface{ Timeout() bool }); ok && ne.Timeout() {
				return out
			}
			t.Fatalf("reading websocket: %v", err)
		}
		var f frame
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatalf("frame is not JSON: %v: %s", err, b)
		}
		out = append(out, f)
		if stop != nil && stop(f) {
			return out
		}
	}
	return out
}

// esc is one escaped path segment.
func esc(name string) string { return url.PathEscape(name) }

// eventually is redistest.EventuallyWithin, kept short for the many web
// tests that wait on the console.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if redistest.SharedCluster() != nil {
		// On the shared test Cluster a discovery walks every running
		// test's keys on three masters, and make test runs this suite
		// beside the browser journeys: waits that follow a discovery took
		// over 5 and 10 s there while they take well under 1 s on a
		// private server.
		d = max(d, clusterPatience)
	}
	redistest.EventuallyWithin(t, d, what, cond)
}

// clusterPatience is the least an eventually waits on the shared Cluster.
const clusterPatience = 30 * time.Second

// delAuthKeys deletes a test console's sign-in state.
func delAuthKeys(rdb *redis.Client, namespace string) {
	ctx := context.Background()
	tag := strings.TrimSuffix(auth.NewKeys(namespace).Secret(), "secret")
	for _, k := range rdb.Keys(ctx, tag+"*").Val() {
		rdb.Del(ctx, k)
	}
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/cmd/lockwarden/internal/consoleclient"
	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/lockwarden/lockwarden/web"
)

// The terminal's commands against a real console in token mode, over the
// test binary's redis-server, run as the built binary.

const (
	testAdminToken  = "admin-token-for-the-terminal-tests"
	testViewerToken = "viewer-token-for-the-terminal-tests"
)

// consoleSeq numbers the test consoles' key prefixes.
var consoleSeq atomic.Int64

// testConsole is a console that sees only its test's keys.
type testConsole struct {
	t      *testing.T
	srv    *web.Server
	cfg    web.Config
	rdb    *redis.Client
	prefix string
	url    string
	// app is a registered application client ("orders-api"): the holders
	// the tests write are its owners, so the console names them.
	app *store.Client
}

// startConsole opens a console in token mode on listen ("127.0.0.1:0"
// for a free port).
func startConsole(t *testing.T, listen string) *testConsole {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: sharedRedis.Addr})
	t.Cleanup(func() { rdb.Close() })
	// Short, so names fit the columns of an 80-column `top`.
	prefix := fmt.Sprintf("tw%d:", consoleSeq.Add(1))
	tc := &testConsole{t: t, rdb: rdb, prefix: prefix, cfg: web.Config{
		Inspector:   inspect.New(rdb, nil),
		Listen:      listen,
		Match:       prefix + "*",
		AdminToken:  testAdminToken,
		ViewerToken: testViewerToken,
		// Each test its own audit trail and sign-in state.
		AuditKey:         "lw:{audit}:" + prefix,
		AuthNamespace:    strings.TrimSuffix(prefix, ":"),
		DiscoverInterval: 200 * time.Millisecond,
	}}
	tc.app = store.New(rdb, &store.Options{App: "orders-api", Version: "v1.0.0"})
	t.Cleanup(func() { tc.app.Close() })
	tc.open()
	t.Cleanup(func() {
		ctx := context.Background()
		for _, pattern := range []string{prefix + "*", "lw:{audit}:" + prefix + "*", "lw:{" + strings.TrimSuffix(prefix, ":") + "}:*"} {
			for _, k := range rdb.Keys(ctx, pattern).Val() {
				rdb.Del(ctx, k)
			}
		}
	})
	return tc
}

// open starts (or starts again) the console on its address.
func (tc *testConsole) open() {
	tc.t.Helper()
	tc.srv = web.New(tc.cfg)
	if err := tc.srv.Open(context.Background()); err != nil {
		tc.t.Fatalf("console Open: %v", err)
	}
	srv := tc.srv
	tc.t.Cleanup(func() { _ = srv.Close() })
	tc.url = tc.srv.URL()
	tc.cfg.Listen = strings.TrimPrefix(tc.url, "http://")
}

// makeLock writes a reentrant lock the way Redisson does, held by owner of
// the test's application client, and returns its holder id.
func (tc *testConsole) makeLock(name, owner string) string {
	tc.t.Helper()
	holder := tc.app.ID() + ":" + owner
	ctx := context.Background()
	if err := tc.rdb.HSet(ctx, name, holder, 1).Err(); err != nil {
		tc.t.Fatal(err)
	}
	if err := tc.rdb.PExpire(ctx, name, time.Minute).Err(); err != nil {
		tc.t.Fatal(err)
	}
	return holder
}

// makeBucket writes a token bucket in its script's layout.
func (tc *testConsole) makeBucket(name string, capacity int, intervalMS string) {
	tc.t.Helper()
	err := tc.rdb.HSet(context.Background(), name, "last_mill_second", time.Now().UnixMilli(), "stored_permits", capacity,
		"max_permits", capacity, "interval", intervalMS, "app", "test").Err()
	if err != nil {
		tc.t.Fatal(err)
	}
}

// client is the console as the role of token sees it.
func (tc *testConsole) client(token string) *consoleclient.Client {
	tc.t.Helper()
	c, err := consoleclient.New(tc.url, token)
	if err != nil {
		tc.t.Fatal(err)
	}
	return c
}

// waitListed waits until the console lists every name (a discovery after
// the test wrote them).
func (tc *testConsole) waitListed(names ...string) {
	tc.t.Helper()
	c := tc.client(testAdminToken)
	redistest.EventuallyWithin(tc.t, 15*time.Second, "the console lists "+strings.Join(names, ", "), func() bool {
		locks, err := c.Locks(context.Background(), consoleclient.ListQuery{})
		if err != nil {
			return false
		}
		lims, err := c.Limiters(context.Background(), consoleclient.ListQuery{})
		if err != nil {
			return false
		}
		var seen []string
		for _, l := range locks.Items {
			seen = append(seen, l.Name)
		}
		for _, l := range lims.Items {
			seen = append(seen, l.Name)
		}
		for _, n := range names {
			if !slices.Contains(seen, n) {
				return false
			}
		}
		return true
	})
}

// runBin runs the built binary with args and stdin, without the test
// environment's LOCKWARDEN_* variables, and returns its exit code and
// output.
func runBin(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LOCKWARDEN_") && !strings.HasPrefix(kv, "COLUMNS=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "COLUMNS=120")
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), out.String(), errb.String()
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, out.String(), errb.String()
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("lockwarden %s still running after 30 s", strings.Join(args, " "))
		return -1, "", ""
	}
}

// freeAddr is a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestVerbsViewerIsRefusedAndNothingChanges(t *testing.T) {
	tc := startConsole(t, "127.0.0.1:0")
	lock, bucket := tc.prefix+"orders:42", tc.prefix+"rl:checkout"
	holder := tc.makeLock(lock, "worker-7")
	tc.makeBucket(bucket, 20, "50")
	tc.waitListed(lock, bucket)

	code, out, errs := runBin(t, "", "unlock", lock, "--holder", holder, "--reason", "stuck since the deploy",
		"--console", tc.url, "--token", testViewerToken)
	if code != exitFail || !strings.Contains(errs, "(403)") || !strings.Contains(errs, "needs the admin role") {
		t.Errorf("viewer's unlock: exit %d, stderr %q, stdout %q; want exit 1 saying it needs the admin role (403)", code, errs, out)
	}
	code, _, errs = runBin(t, "", "edit", bucket, "--rate", "40", "--interval", "25ms", "--reason", "more", "--yes",
		"--console", tc.url, "--token", testViewerToken)
	if code != exitFail || !strings.Contains(errs, "needs the admin role") {
		t.Errorf("viewer's edit: exit %d, stderr %q; want exit 1 saying it needs the admin role", code, errs)
	}
	code, _, errs = runBin(t, "", "release-all", tc.app.ID(), "--reason", "crashed",
		"--console", tc.url, "--token", testViewerToken)
	if code != exitFail || !strings.Contains(errs, "needs the admin role") {
		t.Errorf("viewer's release-all: exit %d, stderr %q; want exit 1 saying it needs the admin role", code, errs)
	}

	ctx := context.Background()
	if got := tc.rdb.HGet(ctx, lock, holder).Val(); got != "1" {
		t.Errorf("after the viewer's unlock the lock's holder field is %q, want it still held (1)", got)
	}
	if got := tc.rdb.HGet(ctx, bucket, "max_permits").Val(); got != "20" {
		t.Errorf("after the viewer's edit max_permits is %q, want 20", got)
	}
	for _, r := range tc.records() {
		if r.Outcome == inspect.OutcomeOK && (r.Action == "force-unlock" || r.Action == "modify" || r.Action == "release-all") {
			t.Errorf("the audit trail has a change a viewer asked for: %+v", r)
		}
	}
}

func TestVerbsAdminUnlockIsAuditedWithItsReason(t *testing.T) {
	tc := startConsole(t, "127.0.0.1:0")
	lock := tc.prefix + "orders:43"
	holder := tc.makeLock(lock, "worker-8")
	tc.waitListed(lock)

	code, out, errs := runBin(t, "", "unlock", "--console", tc.url, lock, "--holder", holder, "--reason", "worker-8 hung on a DB call")
	if code != exitFail || !strings.Contains(errs, "refused the token (401)") {
		t.Errorf("unlock without a token: exit %d, stderr %q; want 1 saying the token was refused (401)", code, errs)
	}
	code, out, errs = runBin(t, "", "unlock", lock, "--holder", holder, "--reason", "worker-8 hung on a DB call",
		"--console", tc.url, "--token", testAdminToken)
	if code != exitOK || !strings.Contains(out, "Force-unlocked") {
		t.Fatalf("admin's unlock: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if n := tc.rdb.Exists(context.Background(), lock).Val(); n != 0 {
		t.Errorf("the lock key still exists after the force-unlock")
	}
	switch r := tc.audited("force-unlock", lock); {
	case r == nil:
		t.Errorf("no successful force-unlock of %s in the audit trail: %+v", lock, tc.records())
	case r.Reason != "worker-8 hung on a DB call" || r.Role != "admin":
		t.Errorf("audit record %+v: want the admin's reason", r)
	}
	// Holder-checked: the same unlock again finds no such holder.
	code, _, errs = runBin(t, "", "unlock", lock, "--holder", holder, "--reason", "again",
		"--console", tc.url, "--token", testAdminToken)
	if code != exitFail || !strings.Contains(errs, lock) {
		t.Errorf("second unlock: exit %d, stderr %q; want 1 naming the lock", code, errs)
	}
}

// records is the console's audit trail, newest first, read through its
// API with the admin's token.
func (tc *testConsole) records() []inspect.AuditRecord {
	tc.t.Helper()
	req, err := http.NewRequest(http.MethodGet, tc.url+"/api/audit", nil)
	if err != nil {
		tc.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testAdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tc.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Records []inspect.AuditRecord `json:"records"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		tc.t.Fatalf("GET /api/audit: %d, %v", resp.StatusCode, err)
	}
	return out.Records
}

// audited is the newest successful audit record of action on target; nil
// when there is none.
func (tc *testConsole) audited(action, target string) *inspect.AuditRecord {
	tc.t.Helper()
	for _, r := range tc.records() {
		if r.Action == action && r.Target == target && r.Outcome == inspect.OutcomeOK {
			return &r
		}
	}
	return nil
}

func TestVerbsJSONIsTheConsolesJSON(t *testing.T) {
	tc := startConsole(t, "127.0.0.1:0")
	lock, bucket := tc.prefix+"orders:44", tc.prefix+"rl:search"
	holder := tc.makeLock(lock, "worker-9")
	tc.makeBucket(bucket, 10, "100")
	tc.waitListed(lock, bucket)

	for _, tt := range []struct {
		args []string
		key  string // a field the answer must have
	}{
		{[]string{"locks"}, "locks"},
		{[]string{"locks", "-q", "worker-9"}, "locks"},
		{[]string{"limiters", "--sort", "rejected"}, "limiters"},
		{[]string{"why", lock}, "answer"},
		{[]string{"deadlocks"}, "deadlocks"},
	} {
		args := append(tt.args, "--json", "--console", tc.url, "--token", testViewerToken)
		code, out, errs := runBin(t, "", args...)
		var v map[string]json.RawMessage
		if code != exitOK || json.Unmarshal([]byte(out), &v) != nil || v[tt.key] == nil {
			t.Errorf("lockwarden %s: exit %d, stdout %q, stderr %q; want JSON with %q", strings.Join(args, " "), code, out, errs, tt.key)
		}
	}
	// The rows are the console's: a script finds the holder where the API
	// puts it.
	_, out, _ := runBin(t, "", "locks", "--json", "--console", tc.url, "--token", testViewerToken)
	var locks struct {
		Locks []consoleclient.Lock `json:"locks"`
	}
	if err := json.Unmarshal([]byte(out), &locks); err != nil || len(locks.Locks) != 1 ||
		locks.Locks[0].Name != lock || len(locks.Locks[0].Holders) != 1 || locks.Locks[0].Holders[0].ID != holder {
		t.Errorf("locks --json = %s; want the one lock held by %s", out, holder)
	}
	// A search that matches nothing is an empty list, not an error.
	_, out, _ = runBin(t, "", "locks", "-q", "nobody-holds-this", "--console", tc.url, "--token", testViewerToken)
	if !strings.Contains(out, `No locks match -q "nobody-holds-this"`) {
		t.Errorf("locks -q nobody-holds-this = %q; want it to say what was searched", out)
	}
}

func TestVerbsSayWhatFailed(t *testing.T) {
	tc := startConsole(t, "127.0.0.1:0")
	dead := "http://" + freeAddr(t)
	code, _, errs := runBin(t, "", "locks", "--console", dead)
	if code != exitFail || !strings.Contains(errs, "cannot reach the console at "+dead) {
		t.Errorf("unreachable console: exit %d, stderr %q; want 1 naming %s", code, errs, dead)
	}
	code, _, errs = runBin(t, "", "locks", "--console", tc.url, "--token", "not-the-token-of-this-console")
	if code != exitFail || !strings.Contains(errs, "refused the token (401)") || !strings.Contains(errs, "LOCKWARDEN_TOKEN") {
		t.Errorf("wrong token: exit %d, stderr %q; want 1 saying the token was refused", code, errs)
	}
	// The environment stands in for the flags.
	cmd := []string{"limiters"}
	env := []string{"LOCKWARDEN_CONSOLE=" + tc.url, "LOCKWARDEN_TOKEN=" + testViewerToken}
	p := startProc(t, env, cmd...)
	if code := p.wait(30 * time.Second); code != exitOK {
		t.Errorf("limiters with LOCKWARDEN_CONSOLE and LOCKWARDEN_TOKEN: exit %d, stderr %q", code, p.stderr.String())
	}
	code, _, errs = runBin(t, "", "why", tc.prefix+"no-such-thing", "--console", tc.url, "--token", testViewerToken)
	if code != exitFail || !strings.Contains(errs, "no lock or limiter named") {
		t.Errorf("why of an unknown name: exit %d, stderr %q", code, errs)
	}
	code, _, errs = runBin(t, "", "unlock", "x", "--reason", "r", "--console", tc.url)
	if code != exitUsage || !strings.Contains(errs, "--holder is required") {
		t.Errorf("unlock without --holder: exit %d, stderr %q; want 2 naming the flag", code, errs)
	}
}

func TestVerbsWhyAnswersForALockAndALimiter(t *testing.T) {
	tc := startConsole(t, "127.0.0.1:0")
	lock, bucket := tc.prefix+"orders:45", tc.prefix+"rl:login"
	holder := tc.makeLock(lock, "worker-10")
	tc.makeBucket(bucket, 20, "100")
	tc.waitListed(lock, bucket)

	code, out, errs := runBin(t, "", "why", lock, "--console", tc.url, "--token", testViewerToken)
	if code != exitOK || !strings.Contains(out, "worker-10") || !strings.Contains(out, "lockwarden unlock "+lock+" --holder "+holder) {
		t.Errorf("why %s: exit %d, stderr %q, stdout:\n%s\nwant who holds it and the unlock that would free it", lock, code, errs, out)
	}
	code, out, errs = runBin(t, "", "why", bucket, "--console", tc.url, "--token", testViewerToken)
	if code != exitOK || !strings.Contains(out, "10 per second, bursts up to 20") {
		t.Errorf("why %s: exit %d, stderr %q, stdout:\n%s\nwant its rule in words", bucket, code, errs, out)
	}
}

func TestVerbsEditShowsTheWhatIfThenAsks(t *testing.T) {
	tc := startConsole(t, "127.0.0.1:0")
	bucket := tc.prefix + "rl:partner"
	tc.makeBucket(bucket, 20, "50")
	tc.waitListed(bucket)
	base := []string{"edit", bucket, "--rate", "40", "--interval", "25ms", "--reason", "partner launch", "--console", tc.url, "--token", testAdminToken}

	code, _, errs := runBin(t, "n\n", base...)
	if code != exitFail || !strings.Contains(errs, "What if") || !strings.Contains(errs, "not confirmed") {
		t.Errorf("edit answered no: exit %d, stderr %q; want the what-if, then not confirmed", code, errs)
	}
	if got := tc.rdb.HGet(context.Background(), bucket, "max_permits").Val(); got != "20" {
		t.Fatalf("max_permits = %q after a refused confirmation, want 20", got)
	}
	code, out, errs := runBin(t, "y\n", base...)
	if code != exitOK || !strings.Contains(out, "now admits 40/s, burst 40") {
		t.Fatalf("edit answered yes: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if got := tc.rdb.HGet(context.Background(), bucket, "max_permits").Val(); got != "40" {
		t.Errorf("max_permits = %q after the edit, want 40", got)
	}
	rec := tc.audited("modify", bucket)
	switch {
	case rec == nil:
		t.Errorf("no successful modify of %s in the audit trail", bucket)
	case rec.Reason != "partner launch":
		t.Errorf("the edit's audit record %+v; want the reason given", rec)
	}
}

func TestVerbsHelpListsFlagsWithTheirEnvironment(t *testing.T) {
	code, out, _ := runInProcess(t, nil, "--help")
	for _, want := range []string{"lockwarden unlock NAME --holder ID --reason TEXT", "lockwarden top [--admin]", "LOCKWARDEN_CONSOLE", "LOCKWARDEN_TOKEN"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("lockwarden --help: exit %d, want %q in:\n%s", code, want, out)
		}
	}
	for _, verb := range []string{"locks", "limiters", "why", "deadlocks", "unlock", "release-all", "edit", "top"} {
		code, _, errs := runInProcess(t, map[string]string{"LOCKWARDEN_TOKEN": "token-from-the-environment"}, verb, "--help")
		if code != exitOK || !strings.Contains(errs, "-console URL") || !strings.Contains(errs, "env LOCKWARDEN_CONSOLE") ||
			!strings.Contains(errs, "env LOCKWARDEN_TOKEN") {
			t.Errorf("lockwarden %s --help: exit %d, want --console and --token with their environment in:\n%s", verb, code, errs)
		}
		if strings.Contains(errs, "token-from-the-environment") {
			t.Errorf("lockwarden %s --help shows the token from the environment", verb)
		}
	}
}

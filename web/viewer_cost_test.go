package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// What a viewer's requests cost Redis. The console's background work reads
// on a budget; a request must not add reads that grow with what a key
// holds (a whole application hash) or with the keyspace (a SCAN walk).

// requestCmds logs the commands sent outside the console's background
// work (whose context carries samplerMark): what requests cost Redis.
type requestCmds struct {
	mu  sync.Mutex
	log []redis.Cmder
}

func (h *requestCmds) add(ctx context.Context, cmds ...redis.Cmder) {
	if ctx.Value(samplerMark{}) != nil {
		return
	}
	h.mu.Lock()
	h.log = append(h.log, cmds...)
	h.mu.Unlock()
}

func (h *requestCmds) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *requestCmds) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.add(ctx, cmd); return next(ctx, cmd) }
}
func (h *requestCmds) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.add(ctx, cmds...); return next(ctx, cmds) }
}

// take returns the commands logged since the last take, one "name args"
// line each, and forgets them.
func (h *requestCmds) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.log))
	for _, c := range h.log {
		out = append(out, strings.TrimSpace(fmt.Sprintln(c.Args()...)))
	}
	h.log = nil
	return out
}

// count is how many of lines are command name (with key among their
// arguments, if key != "").
func count(lines []string, name, key string) int {
	n := 0
	for _, l := range lines {
		args := strings.Fields(l)
		if len(args) == 0 || !strings.EqualFold(args[0], name) {
			continue
		}
		if key == "" || strings.Contains(l, " "+key) {
			n++
		}
	}
	return n
}

// costEnv is a console over a private Redis whose request commands are
// logged.
func costEnv(t *testing.T, mod func(*Config)) (*testEnv, *requestCmds) {
	t.Helper()
	rdb := redistest.NewClient(t, redistest.StartT(t))
	h := &requestCmds{}
	rdb.AddHook(h)
	e := openMarked(t, rdb, redistest.Prefix(t), mod)
	e.synced()
	return e, h
}

// An application's large hash named in a request is "no such lock" (or
// limiter), answered without its HGETALL, on every route that reads one
// name: the API, the pages, the force-unlock confirmation and the history
// of a name without history. (store/inspect's TestGetByNameNeverReadsALargeHash
// checks that Redis runs no HGETALL of it inside a script either.)
func TestViewerByNameNeverReadsALargeHash(t *testing.T) {
	e, cmds := costEnv(t, nil)
	ctx := t.Context()
	big := e.prefix + "sessions"
	pipe := e.rdb.Pipeline()
	for i := 0; i < 20000; i += 1000 {
		args := make([]any, 0, 2000)
		for j := i; j < i+1000; j++ {
			args = append(args, "s"+strconv.Itoa(j), j)
		}
		pipe.HSet(ctx, big, args...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	lock := e.prefix + "lock"
	e.makeLock(lock, "w1", 1, time.Minute)
	e.synced()
	cmds.take()

	routes := []string{"/api/locks/%s", "/locks/%s", "/locks/%s/force-unlock?holder=x:1", "/api/locks/%s/history",
		"/api/limiters/%s", "/limiters/%s", "/api/limiters/%s/history"}
	for _, r := range routes {
		path := fmt.Sprintf(r, esc(big))
		for range 3 {
			if st, _, b := e.do("GET", path, nil, nil); st != http.StatusNotFound {
				t.Fatalf("GET %s: status %d, want 404; body %.300s", path, st, b)
			}
		}
	}
	sent := cmds.take()
	if n := count(sent, "hgetall", big); n != 0 {
		t.Errorf("%d requests naming a hash of 20,000 fields sent HGETALL of it %d times, want 0", 3*len(routes), n)
	}
	named := 0
	for _, l := range sent {
		if strings.Contains(l, " "+big) {
			named++
		}
	}
	if named == 0 {
		t.Errorf("the requests sent nothing naming the hash (%d commands): the count above cannot fail", len(sent))
	}

	// A lock is still read by name.
	var l struct {
		Holders []struct {
			ID string `json:"id"`
		} `json:"holders"`
	}
	e.getJSON("/api/locks/"+esc(lock), http.StatusOK, &l)
	if len(l.Holders) != 1 || l.Holders[0].ID != holderID("w1") {
		t.Fatalf("GET the lock = %+v", l)
	}
}

// A per-client Redisson limiter's page and API list its clients from the
// tick's reads of its family: page loads send no SCAN, however many
// clients it has, and the list is the clients with the smallest ids.
func TestViewerPerClientLimiterPageNeverScans(t *testing.T) {
	const clients = 3000
	e, cmds := costEnv(t, nil)
	ctx := t.Context()
	name := e.prefix + "partner"
	e.rdb.HSet(ctx, name, "rate", 10, "interval", 60000, "type", 1)
	pipe := e.rdb.Pipeline()
	for i := range clients {
		pipe.Set(ctx, fmt.Sprintf("{%s}:value:c-%05d", name, i), 3, time.Hour) // 7 of 10 taken
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	var lim struct {
		PerClient bool `json:"per_client"`
		Clients   []struct {
			ClientID  string `json:"client_id"`
			Available int64  `json:"available"`
			Used      int64  `json:"used"`
		} `json:"clients"`
	}
	// Once a pass of its family has read every client, the list is the
	// smallest ids.
	eventually(t, 60*time.Second, "a whole pass over the limiter's clients", func() bool {
		var fam familyJSON
		st, _, b := e.do("GET", "/api/families/"+esc(name), nil, nil)
		return st == http.StatusOK && json.Unmarshal(b, &fam) == nil && fam.Passes > 0
	})
	e.getJSON("/api/limiters/"+esc(name), http.StatusOK, &lim)
	if !lim.PerClient || len(lim.Clients) != inspect.MaxClientsShown {
		t.Fatalf("the limiter lists %d clients (per client: %v), want %d", len(lim.Clients), lim.PerClient, inspect.MaxClientsShown)
	}
	for i, c := range lim.Clients {
		if want := fmt.Sprintf("c-%05d", i); c.ClientID != want || c.Available != 3 || c.Used != 7 {
			t.Errorf("client %d = %+v, want %s with 3 available and 7 used", i, c, want)
			break
		}
	}

	cmds.take()
	const loads = 5
	for range loads {
		e.getJSON("/api/limiters/"+esc(name), http.StatusOK, &lim)
		st, _, b := e.do("GET", "/limiters/"+esc(name), nil, nil)
		if rows := parseHTML(t, b).Find(`[data-testid="client-row"]`).Length(); st != http.StatusOK || rows != inspect.MaxClientsShown {
			t.Fatalf("GET /limiters/%s: status %d, %d client rows, want %d", name, st, rows, inspect.MaxClientsShown)
		}
	}
	sent := cmds.take()
	if n := count(sent, "scan", ""); n != 0 {
		t.Errorf("%d loads of a per-client limiter's page and API sent %d SCANs, want 0", 2*loads, n)
	}
	if len(sent) == 0 {
		t.Error("the loads sent no command at all: the count above cannot fail")
	}
}

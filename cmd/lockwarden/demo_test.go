package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// demoRedis parses "lockwarden demo: redis-server at redis://ADDR (pid N)".
func demoRedis(t *testing.T, p *proc) (addr string, pid int) {
	t.Helper()
	line := p.waitLine("lockwarden demo: redis-server at ", 15*time.Second)
	rest := strings.TrimPrefix(line, "lockwarden demo: redis-server at redis://")
	addr, pidPart, ok := strings.Cut(rest, " (pid ")
	if !ok {
		t.Fatalf("unexpected redis line %q", line)
	}
	pid, err := strconv.Atoi(strings.TrimSuffix(pidPart, ")"))
	if err != nil || pid <= 0 {
		t.Fatalf("unexpected redis line %q", line)
	}
	return addr, pid
}

type apiLimiters struct {
	Limiters []struct {
		Name     string `json:"name"`
		Kind     string `json:"kind"`
		Rate     int64  `json:"rate"`
		Interval int64  `json:"interval_ms"`
		Window   struct {
			Acquired int64 `json:"acquired"`
		} `json:"window"`
	} `json:"limiters"`
}

type apiLocks struct {
	Locks []struct {
		Name string `json:"name"`
	} `json:"locks"`
}

func TestCmdDemo(t *testing.T) {
	p := startProc(t, nil, "demo", "--listen", "127.0.0.1:0")
	redisAddr, redisPID := demoRedis(t, p)
	base := listeningURL(t, p)

	// The console must find both buckets with traffic in their window, and
	// the contended locks, within 10 s of listening.
	var (
		apiSeen, loginSeen bool
		locks              map[string]bool
	)
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; i < 100 && time.Now().Before(deadline); i++ {
		var lim apiLimiters
		getJSON(t, base+"/api/limiters", &lim)
		for _, l := range lim.Limiters {
			switch l.Name {
			case "demo:api":
				if l.Kind != "token-bucket" || l.Rate != 500 || l.Interval != 2 {
					t.Fatalf("demo:api is %+v, want a token bucket of 500 per 2 ms", l)
				}
				apiSeen = apiSeen || l.Window.Acquired > 0
			case "demo:login":
				loginSeen = true
			}
		}
		var lk apiLocks
		getJSON(t, base+"/api/locks", &lk)
		locks = map[string]bool{}
		for _, l := range lk.Locks {
			locks[l.Name] = true
		}
		if apiSeen && loginSeen && locks["demo:lock:stuck"] && len(locks) >= 3 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !apiSeen || !loginSeen {
		t.Errorf("within 10 s: demo:api with a non-zero window %v, demo:login listed %v", apiSeen, loginSeen)
	}
	if !locks["demo:lock:stuck"] || len(locks) < 3 {
		t.Errorf("within 10 s the console listed locks %v; want demo:lock:stuck and at least two contended ones", locks)
	}

	p.signal(syscall.SIGTERM)
	if code := p.wait(5 * time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0", code)
	}
	if !processGone(redisPID) {
		t.Errorf("redis-server pid %d still runs after the demo exited", redisPID)
	}
	if err := dialOnce(redisAddr); err == nil {
		t.Errorf("redis-server at %s still accepts connections after the demo exited", redisAddr)
	}
}

func TestCmdDemoPortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().String()

	p := startProc(t, nil, "demo", "--listen", taken)
	_, redisPID := demoRedis(t, p)
	if code := p.wait(15 * time.Second); code != 1 {
		t.Fatalf("exit code %d, want 1", code)
	}
	errs := p.stderr.String()
	for _, want := range []string{"lockwarden: cannot listen on " + taken, "already in use", "--listen 127.0.0.1:0"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr %q does not contain %q", errs, want)
		}
	}
	if !processGone(redisPID) {
		t.Errorf("redis-server pid %d still runs after the demo gave up", redisPID)
	}
}

// getJSON reads url into v. A console answers 503 until its first sampler
// tick (lists are served from the snapshot, never from a SCAN), so a 503 is
// retried for a bounded while.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, body := getOnce(t, url)
		if status == http.StatusServiceUnavailable && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if status != http.StatusOK {
			t.Fatalf("GET %s: status %d: %s", url, status, body)
		}
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		return
	}
}

func getOnce(t *testing.T, url string) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, body
}

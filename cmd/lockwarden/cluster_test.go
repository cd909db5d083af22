package main

import (
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// demo --cluster runs the same traffic on a private 3-master Cluster, the
// console finds locks whose keys live on different masters, and every
// node dies with the demo.
func TestCmdDemoCluster(t *testing.T) {
	p := startProc(t, nil, "demo", "--cluster", "--listen", "127.0.0.1:0")
	line := p.waitLine("lockwarden demo: Redis Cluster of 3 masters at ", 60*time.Second)
	rest := strings.TrimPrefix(line, "lockwarden demo: Redis Cluster of 3 masters at ")
	addrPart, pidPart, ok := strings.Cut(rest, " (pids ")
	addrs := strings.Fields(addrPart)
	if !ok || len(addrs) != 3 {
		t.Fatalf("unexpected cluster line %q", line)
	}
	var pids []int
	for _, f := range strings.Fields(strings.TrimSuffix(pidPart, ")")) {
		pid, err := strconv.Atoi(f)
		if err != nil || pid <= 0 {
			t.Fatalf("unexpected cluster line %q", line)
		}
		pids = append(pids, pid)
	}
	base := listeningURL(t, p)

	// The console must see the demo's objects through the Cluster client,
	// whichever master holds each key.
	var locks map[string]bool
	apiSeen := false
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; i < 200 && time.Now().Before(deadline); i++ {
		var lim apiLimiters
		getJSON(t, base+"/api/limiters", &lim)
		for _, l := range lim.Limiters {
			apiSeen = apiSeen || (l.Name == "demo:api" && l.Window.Acquired > 0)
		}
		var lk apiLocks
		getJSON(t, base+"/api/locks", &lk)
		locks = map[string]bool{}
		for _, l := range lk.Locks {
			locks[l.Name] = true
		}
		if apiSeen && locks["demo:lock:stuck"] && len(locks) >= 3 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !apiSeen || !locks["demo:lock:stuck"] || len(locks) < 3 {
		t.Errorf("within 20 s: demo:api with traffic %v, locks %v; want demo:lock:stuck and two more", apiSeen, locks)
	}

	p.signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0", code)
	}
	for i, pid := range pids {
		if !processGone(pid) {
			t.Errorf("cluster node pid %d still runs after the demo exited", pid)
		}
		if err := dialOnce(addrs[i]); err == nil {
			t.Errorf("cluster node %s still accepts connections after the demo exited", addrs[i])
		}
	}
}

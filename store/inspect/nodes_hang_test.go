package inspect

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// A master that hangs (stopped, not refusing: what a network partition or
// a stalled host looks like) is the one reported down; the masters that
// answer stay up in every check. Before, the health check went through
// ForEachMaster, whose synchronous slot-map reload asked the hung node one
// time in three and used up the check's deadline, so every node read as
// down ("context deadline exceeded") and the console showed Redis down.
func TestNodesHungMasterLeavesOthersUp(t *testing.T) {
	t.Parallel() // its own Cluster; it waits on a stopped master
	c := redistest.StartCluster(t, nil)
	cc := redistest.NewClusterClient(t, c)
	in := New(cc, nil)
	ctx := t.Context()
	if _, err := in.Nodes(ctx); err != nil {
		t.Fatal(err)
	}
	hung := c.Nodes()[0]
	if err := syscall.Kill(hung.PID(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(hung.PID(), syscall.SIGCONT) })

	for i := range 6 {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		nodes, err := in.Nodes(cctx)
		cancel()
		if err != nil {
			t.Fatalf("check %d: %v", i, err)
		}
		if len(nodes) != 3 {
			t.Fatalf("check %d: %d nodes, want 3: %+v", i, len(nodes), nodes)
		}
		for _, n := range nodes {
			if want := n.Addr != hung.Addr; n.Up != want {
				t.Fatalf("check %d: node %s up=%v (%s), want up=%v (hung: %s)", i, n.Addr, n.Up, n.Err, want, hung.Addr)
			}
		}
	}

	if err := syscall.Kill(hung.PID(), syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		nodes, err := in.Nodes(ctx)
		up := 0
		for _, n := range nodes {
			if n.Up {
				up++
			}
		}
		if err == nil && up == 3 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after SIGCONT: %+v, %v", nodes, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// While a master hangs, every sample still succeeds: the locks on the
// masters that answer are read live and the hung master's are Unreadable.
// Before, TIME fell back to ForEachMaster, whose synchronous reload waited
// on the hung node, and every tick failed with "no Redis master answered
// TIME" (seen by hand with SIGSTOP on demo --cluster).
func TestSampleHungMasterLeavesOthersLive(t *testing.T) {
	t.Parallel() // its own Cluster; it waits on a stopped master
	// With the default cluster-require-full-coverage the other masters
	// refuse every key (CLUSTERDOWN) once the node timeout passes, and all
	// objects are rightly unreadable.
	c := redistest.StartCluster(t, &redistest.ClusterOptions{Extra: []string{"--cluster-require-full-coverage", "no"}})
	cc := redistest.NewClusterClient(t, c)
	in := New(cc, nil)
	app := store.New(cc, &store.Options{NoRegistry: true})
	ctx := t.Context()
	hung := c.Nodes()[0]
	var names []string
	onHung := map[string]bool{}
	for i := range 12 {
		name := fmt.Sprintf("hang-lock-%d", i)
		if err := app.NewLock(name, nil).TryLock(ctx); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
		onHung[name] = in.nodes.NodeOf(ctx, name) == hung.Addr
	}
	if _, err := in.Nodes(ctx); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(hung.PID(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(hung.PID(), syscall.SIGCONT) })

	for i := range 6 {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, _ = in.Nodes(cctx)
		cancel()
		cctx, cancel = context.WithTimeout(ctx, 2*time.Second)
		s, err := in.Sample(cctx, names, nil)
		cancel()
		if err != nil {
			t.Fatalf("sample %d with a master hung: %v", i, err)
		}
		live := map[string]bool{}
		for _, l := range s.Locks {
			live[l.Name] = true
		}
		for _, n := range names {
			_, unread := s.Unreadable[n]
			if onHung[n] != unread || onHung[n] == live[n] {
				t.Fatalf("sample %d: %s on the hung master=%v, read live=%v, unreadable=%v (%+v)", i, n, onHung[n], live[n], unread, s.Unreadable[n])
			}
		}
	}
}

// With the default cluster-require-full-coverage, a hung master without a
// replica takes the whole Cluster down: the others answer every key with
// CLUSTERDOWN. The sample still stands (TIME has no key and they answer
// it), every object unreadable with that reason, so the console keeps its
// last numbers marked stale instead of failing every tick with "no Redis
// master answered TIME: every master is down" (seen by hand on demo
// --cluster).
func TestSampleClusterDownKeepsSampling(t *testing.T) {
	t.Parallel() // its own Cluster; it waits on a stopped master
	c := redistest.StartCluster(t, nil)
	cc := redistest.NewClusterClient(t, c)
	in := New(cc, nil)
	app := store.New(cc, &store.Options{NoRegistry: true})
	ctx := t.Context()
	var names []string
	for i := range 6 {
		name := fmt.Sprintf("cdown-lock-%d", i)
		if err := app.NewLock(name, nil).TryLock(ctx); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	hung := c.Nodes()[0]
	if err := syscall.Kill(hung.PID(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(hung.PID(), syscall.SIGCONT) })
	live := c.Nodes()[1]
	probe := redistest.NewClient(t, live)
	deadline := time.Now().Add(20 * time.Second)
	for { // the others see the Cluster fail after the node timeout
		if info, _ := probe.ClusterInfo(ctx).Result(); strings.Contains(info, "cluster_state:fail") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the Cluster never went down")
		}
		time.Sleep(100 * time.Millisecond)
	}
	for i := range 4 {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, _ = in.Nodes(cctx)
		cancel()
		cctx, cancel = context.WithTimeout(ctx, 2*time.Second)
		s, err := in.Sample(cctx, names, nil)
		cancel()
		if err != nil {
			t.Fatalf("sample %d with the Cluster down: %v", i, err)
		}
		if len(s.Locks) != 0 || len(s.Unreadable) != len(names) {
			t.Fatalf("sample %d: %d read, %d unreadable (%v), want all %d unreadable", i, len(s.Locks), len(s.Unreadable), s.Unreadable, len(names))
		}
	}
}

package inspect

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/redistest"
)

// A master that hangs (stopped, not refusing: what a network partition or
// a stalled host looks like) is the one reported down; the masters that
// answer stay up in every check. Before, the health check went through
// ForEachMaster, whose synchronous slot-map reload asked the hung node one
// time in three and used up the check's deadline, so every node read as
// down ("context deadline exceeded") and the console showed Redis down.
func TestNodesHungMasterLeavesOthersUp(t *testing.T) {
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

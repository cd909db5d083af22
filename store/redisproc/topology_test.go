package redisproc

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestStartClusterServesEverySlot(t *testing.T) {
	start := time.Now()
	c, err := StartCluster(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	t.Logf("3-master cluster up in %v", time.Since(start).Round(time.Millisecond))
	if len(c.Masters) != 3 || len(c.Replicas) != 0 {
		t.Fatalf("masters %d replicas %d, want 3 and 0", len(c.Masters), len(c.Replicas))
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { rdb.Close() })
	// Keys spread over all masters: every write must land somewhere.
	for i := 0; i < 30; i++ {
		if err := rdb.Set(t.Context(), "k"+string(rune('a'+i)), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	n, err := rdb.DBSize(t.Context()).Result()
	if err != nil || n != 30 {
		t.Fatalf("DBSIZE over the cluster = %d, %v; want 30", n, err)
	}
}

func TestStartSentinelKnowsItsMaster(t *testing.T) {
	s, err := StartSentinel(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	got, err := s.CurrentMaster(t.Context())
	if err != nil || got != s.Master.Addr {
		t.Fatalf("CurrentMaster = %q, %v; want %s", got, err, s.Master.Addr)
	}
}

// With a replica per master, killing a master hands its slots to its
// replica and a Cluster client writes there again.
func TestClusterReplicaTakesOver(t *testing.T) {
	c, err := StartCluster(&ClusterOptions{ReplicasPerMaster: 1, NodeTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	if len(c.Masters) != 3 || len(c.Replicas) != 3 {
		t.Fatalf("masters %d replicas %d, want 3 and 3", len(c.Masters), len(c.Replicas))
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { rdb.Close() })
	ctx := t.Context()
	m, err := rdb.MasterForKey(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Masters {
		if n.Addr == m.Options().Addr {
			n.Pause()
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if err = rdb.Set(ctx, "k", 1, 0).Err(); err == nil {
			break
		}
		// go-redis reloads its slot map lazily; ask for it, as an
		// application's error handling would.
		rdb.ReloadState(ctx)
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		other := redis.NewClient(&redis.Options{Addr: c.Replicas[0].Addr})
		defer other.Close()
		nodes, _ := other.ClusterNodes(ctx).Result()
		t.Fatalf("no write to k within 20s of killing its master %s: %v\n%s", m.Options().Addr, err, nodes)
	}
	now, err := rdb.MasterForKey(ctx, "k")
	if err != nil || now.Options().Addr == m.Options().Addr {
		t.Fatalf("k's master is still %s (%v)", m.Options().Addr, err)
	}
}

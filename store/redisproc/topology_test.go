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

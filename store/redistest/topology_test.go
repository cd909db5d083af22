package redistest

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// A *redis.Client backed by a Cluster client reaches every slot, keeps
// pipelines and same-slot transactions working, and fails a cross-slot
// command the way any Cluster client does.
func TestClusterBackedClientRoutesBySlot(t *testing.T) {
	cl := StartCluster(t, nil)
	cc := NewClusterClient(t, cl)
	c := clusterBacked(cl.Masters[0].Addr, cc)
	t.Cleanup(func() { c.Close() })
	ctx := t.Context()

	for i := 0; i < 30; i++ { // 30 keys spread over all three masters
		if err := c.Set(ctx, "k"+strconv.Itoa(i), i, 0).Err(); err != nil {
			t.Fatalf("SET k%d: %v", i, err)
		}
	}
	var perMaster []int64
	for _, m := range cl.Masters {
		n := redis.NewClient(&redis.Options{Addr: m.Addr})
		size, err := n.DBSize(ctx).Result()
		n.Close()
		if err != nil {
			t.Fatal(err)
		}
		perMaster = append(perMaster, size)
	}
	if perMaster[0]+perMaster[1]+perMaster[2] != 30 || perMaster[0] == 30 {
		t.Fatalf("keys per master %v, want 30 spread over the masters", perMaster)
	}

	pipe := c.Pipeline()
	gets := make([]*redis.StringCmd, 30)
	for i := range gets {
		gets[i] = pipe.Get(ctx, "k"+strconv.Itoa(i))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("pipeline: %v", err)
	}
	for i, g := range gets {
		if g.Val() != strconv.Itoa(i) {
			t.Fatalf("pipelined GET k%d = %q", i, g.Val())
		}
	}

	tx := c.TxPipeline()
	incr := tx.Incr(ctx, "{tag}a")
	tx.Incr(ctx, "{tag}b")
	if _, err := tx.Exec(ctx); err != nil || incr.Val() != 1 {
		t.Fatalf("same-slot MULTI: %d, %v", incr.Val(), err)
	}

	err := c.MSet(ctx, "k0", 1, "k1", 2).Err()
	var re redis.Error
	if !errors.As(err, &re) || !strings.HasPrefix(re.Error(), "CROSSSLOT") {
		t.Fatalf("cross-slot MSET: err = %v, want CROSSSLOT from Redis", err)
	}
}

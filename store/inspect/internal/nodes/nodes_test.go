package nodes

import (
	"testing"

	"github.com/lockwarden/lockwarden/store/redistest"
)

// A read fails "for want of its node" only when the node did not answer or
// refuses every key; an answer about the key itself (nil, WRONGTYPE) says
// the object is gone or something else, and must not keep it shown stale.
func TestNodeFailureTellsNodeFromKey(t *testing.T) {
	ctx := t.Context()
	rdb := redistest.NewClient(t, redistest.StartT(t))
	key := redistest.Prefix(t) + "str"
	if err := rdb.Set(ctx, key, "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Del(ctx, key) })
	// A Cluster node that serves no slot answers every key with CLUSTERDOWN.
	slotless := redistest.NewClient(t, redistest.StartT(t, "--cluster-enabled", "yes"))
	gone := redistest.StartT(t)
	deadClient := redistest.NewClient(t, gone)
	gone.Stop()

	cases := []struct {
		what string
		err  error
		want bool
	}{
		{"no error", rdb.Get(ctx, key).Err(), false},
		{"nil reply", rdb.Get(ctx, key+":missing").Err(), false},
		{"WRONGTYPE", rdb.HGetAll(ctx, key).Err(), false},
		{"CLUSTERDOWN", slotless.Get(ctx, key).Err(), true},
		{"refused dial", deadClient.Get(ctx, key).Err(), true},
	}
	for _, c := range cases {
		if got := Failure(c.err); got != c.want {
			t.Errorf("%s (%v): Failure = %v, want %v", c.what, c.err, got, c.want)
		}
	}
}

package wire

import (
	"context"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ShardedPubSub reports whether unlock messages must also travel as sharded
// pub/sub: on a Cluster of Redis >= 7, Redisson >= 3.22 publishes with
// SPUBLISH and waits with SSUBSCRIBE, and a sharded subscriber never sees a
// classic PUBLISH (nor the reverse). One plain INFO answers both questions
// (its default sections include server and cluster, on every version), and
// it works through any client, including one that routes to a Cluster.
func ShardedPubSub(ctx context.Context, rdb redis.Cmdable) (bool, error) {
	info, err := rdb.Info(ctx).Result()
	if err != nil {
		return false, err
	}
	return shardedFromInfo(info), nil
}

// ShardedFromInfo is ShardedPubSub's answer from an INFO already read.
func ShardedFromInfo(info string) bool { return shardedFromInfo(info) }

// shardedFromInfo reads cluster_enabled and the major of redis_version.
func shardedFromInfo(info string) bool {
	var cluster bool
	major := 0
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch k {
		case "cluster_enabled":
			cluster = v == "1"
		case "redis_version":
			major, _ = strconv.Atoi(strings.SplitN(v, ".", 2)[0])
		}
	}
	return cluster && major >= 7
}

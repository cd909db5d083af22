package inspect

import (
	"context"

	"github.com/lockwarden/lockwarden/store/inspect/internal/pubsub"
	"github.com/redis/go-redis/v9"
)

// queueSubscriberCounts queues the counts of want's channels (lock name ->
// channel) as pubsub.QueueCounts does; nothing on a Cluster without
// sharded pub/sub or while the deployment's pub/sub mode is not known and
// cannot be read (the next tick asks again); nil when there is nothing to
// count.
func (c *Inspector) queueSubscriberCounts(ctx context.Context, pipe redis.Pipeliner, want map[string]string, up func(key string) bool) *pubsub.Counts {
	if len(want) == 0 {
		return nil
	}
	_, cluster := c.rdb.(*redis.ClusterClient)
	var watched map[string]struct{}
	if cluster {
		if sharded, err := c.pubsubFlag(ctx); err != nil || sharded != "1" {
			return nil
		}
		if p := c.ownShard.Load(); p != nil {
			watched = *p
		}
	}
	return pubsub.QueueCounts(ctx, pipe, cluster, want, up, watched)
}

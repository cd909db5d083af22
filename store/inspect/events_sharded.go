package inspect

import (
	"context"
	"fmt"
	"strings"

	"github.com/lockwarden/lockwarden/store/internal/wire"
)

// Sharded pub/sub. On a Cluster of Redis >= 7 Redisson publishes unlocks
// with SPUBLISH, which only a sharded subscriber on the master of the
// channel's slot receives, and sharded channels have no pattern form: the
// event stream follows the unlock channels of the locks the sampler knows
// (EventStream.Watch) with one SSUBSCRIBE connection per master
// (internal/shard), and the console's own releases publish both ways.

// pubsubFlag is the release scripts' ARGV flag, "1" when unlock messages
// must also go out with SPUBLISH (Redisson >= 3.22 waits with SSUBSCRIBE on
// a Cluster of Redis >= 7), decided once per Inspector with one INFO. A
// failure decides nothing and is returned before any script is sent.
func (c *Inspector) pubsubFlag(ctx context.Context) (string, error) {
	switch c.pubsub.Load() {
	case 1:
		return "0", nil
	case 2:
		return "1", nil
	}
	sharded, err := wire.ShardedPubSub(ctx, c.rdb)
	if err != nil {
		return "", fmt.Errorf("inspect: reading the Redis topology (INFO): %w", err)
	}
	if sharded {
		c.pubsub.Store(2)
		return "1", nil
	}
	c.pubsub.Store(1)
	return "0", nil
}

// lockChannels are the channels a release or force-unlock of locks is
// announced on: each lock's own channel and, for a fair lock, the channel
// of every waiter shown (Redisson wakes the next waiter on its own one,
// "<lock channel>:<waiter id>"). store's queued waiters are woken on the
// hand-off channel with PUBLISH, which no sharded subscription hears:
// left out, so their coming and going rebuilds no subscription.
func lockChannels(locks []LockInfo) map[string]struct{} {
	out := make(map[string]struct{}, len(locks))
	for _, l := range locks {
		if l.Channel == "" {
			continue
		}
		out[l.Channel] = struct{}{}
		for _, w := range l.Waiters {
			if strings.HasPrefix(w.Channel, l.Channel+":") {
				out[w.Channel] = struct{}{}
			}
		}
	}
	return out
}

package store

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// On a Cluster of Redis >= 7, Redisson >= 3.22 waits for unlock messages
// with SSUBSCRIBE and publishes them with SPUBLISH; a sharded subscriber
// never sees a classic PUBLISH. So the release scripts publish both ways
// there, told by an ARGV flag that the Client decides once (one INFO) at the
// first lock call. The channel holds the lock's {name} tag, so it hashes to
// the lock's slot and SPUBLISH from the script is legal.

// pubsubMode is that decision, shared by every handle of a Client. It is an
// argument of the prepared script calls itself: go-redis writes it through
// MarshalBinary when a call is sent, so handles made before the decision
// send the decided flag.
type pubsubMode struct {
	state atomic.Int32 // 0 undecided, 1 classic only, 2 classic and sharded
}

// MarshalBinary is the script's flag: "1" to SPUBLISH as well. Undecided
// sends "0" (classic only, what every Redis understands). go-redis only
// copies the bytes into its write buffer, so every call shares them.
func (m *pubsubMode) MarshalBinary() ([]byte, error) {
	if m.state.Load() == 2 {
		return flagSharded, nil
	}
	return flagClassic, nil
}

var flagSharded, flagClassic = []byte("1"), []byte("0")

// sharded reports the decision (false while undecided).
func (m *pubsubMode) sharded() bool { return m.state.Load() == 2 }

// decidePubsub asks Redis once per Client whether unlocks must also go out
// sharded. A failure decides nothing (the next call asks again) and is
// returned before any script is sent, so the caller's call did not happen:
// an acquire reports it as ErrNotObtained (see notObtained), a release as
// an *UncertainError (a documented error; retrying the release is safe).
func (c *Client) decidePubsub(ctx context.Context) error {
	if c.pubsub.state.Load() != 0 {
		return nil
	}
	info, err := c.rdb.Info(ctx).Result()
	if err != nil {
		return &UncertainError{Err: fmt.Errorf("reading the Redis topology (INFO), nothing was sent: %w", err)}
	}
	sharded := wire.ShardedFromInfo(info)
	if _, cluster := c.rdb.(*redis.ClusterClient); !cluster && c.ack != nil {
		// The same INFO tells the replica acknowledgement about the master
		// (a Cluster's masters are asked one by one).
		c.ack.learn("", info)
	}
	v := int32(1)
	if sharded {
		v = 2
	}
	c.pubsub.state.CompareAndSwap(0, v)
	return nil
}

// notObtained is decidePubsub's failure as an acquire sees it: nothing was
// sent, so the lock was simply not obtained.
func notObtained(err error) error {
	var ue *UncertainError
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("%w: %w", ErrNotObtained, err)
}

package history

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// Flushed reads the Redis time of the newest sample the writer flushed
// (the meta key's "through"): where every read ends, and so what a cache
// of the reads is keyed by. Zero before any flush.
func (h *History) Flushed(ctx context.Context) (time.Time, error) {
	ms, err := h.rdb.HGet(ctx, MetaKey, "through").Int64()
	if errors.Is(err, redis.Nil) || (err == nil && ms <= 0) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(ms), nil
}

package store

import (
	"context"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// validateRedissonRate checks a Redisson rate and interval as Redisson
// stores them: whole numbers, rate at least 1, interval at least 1 ms.
func validateRedissonRate(rate int64, intervalMS float64) error {
	if field, msg := wire.CheckRedissonRate(rate, intervalMS); field != "" {
		return &ValidationError{Field: field, Message: msg}
	}
	return nil
}

// runSetRate configures a Redisson limiter (creating it when absent) with
// the set-rate script the console's edit uses too.
func runSetRate(ctx context.Context, rdb redis.UniversalClient, keys []string, rate, intervalMS int64,
	typ string, keep bool, algorithm string) error {
	code, err := wire.SetRedissonRate(ctx, rdb, keys, rate, intervalMS, typ, "", keep, algorithm, true)
	switch {
	case err != nil:
		return bucketRedisErr(markUncertain(err))
	case code == 1:
		return nil
	}
	return ErrWrongKind
}

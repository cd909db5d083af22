package store

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/lockwarden/lockwarden/luascripts"
	"github.com/redis/go-redis/v9"
)

// Token locks in the layout of seed 004, redsync and bsm/redislock: a string
// key SET NX PX to a random token, released and refreshed only by whoever
// holds that token (compare-and-delete, compare-and-pexpire). The console
// lists them by configured pattern (ObjectPatterns.TokenLocks) and shows the
// token as the holder.

var (
	tokenLockObtainScript  = redis.NewScript(luascripts.Source("tokenlock_obtain"))
	tokenLockRefreshScript = redis.NewScript(luascripts.Source("tokenlock_refresh"))
)

// TokenLock is one holding of a token lock.
type TokenLock struct {
	c     *Client
	name  string
	token string
}

// NewTokenLock returns a handle with a fresh random token (16 random bytes,
// URL-safe base64, like bsm/redislock). token, when not "", is used instead
// (e.g. to release a lock taken by another process that shared its token).
func (c *Client) NewTokenLock(name, token string) *TokenLock {
	if token == "" {
		var b [16]byte
		_, _ = rand.Read(b[:]) // crypto/rand never fails on Linux
		token = base64.RawURLEncoding.EncodeToString(b[:])
	}
	return &TokenLock{c: c, name: name, token: token}
}

// Name is the lock's key; Token the value it holds while this handle has it.
func (t *TokenLock) Name() string  { return t.name }
func (t *TokenLock) Token() string { return t.token }

func (t *TokenLock) validate(lease time.Duration) error {
	if err := validateName(t.name); err != nil {
		return err
	}
	if lease < time.Millisecond {
		return invalid("lease", "must be at least 1ms, got %v", lease)
	}
	if len(t.token) == 0 || len(t.token) > maxStringValue {
		return invalid("token", "must be 1 to %d bytes, got %d", maxStringValue, len(t.token))
	}
	return nil
}

// TryObtain takes the lock for lease if it is free (or already this
// token's: the lease restarts). When another token holds it the error is a
// *LockedError with that holder's remaining lease (errors.Is
// ErrNotObtained).
func (t *TokenLock) TryObtain(ctx context.Context, lease time.Duration) error {
	if err := t.validate(lease); err != nil {
		return err
	}
	res, err := runScript(ctx, t.c.rdb, tokenLockObtainScript, []string{t.name, StatsKey(t.name)},
		t.token, lease.Milliseconds()).Int64Slice()
	if err != nil {
		return fmt.Errorf("store: token lock %q: %w", t.name, err)
	}
	if len(res) == 2 && res[0] == 1 {
		return nil
	}
	ttl := time.Duration(-1)
	if len(res) == 2 && res[1] >= 0 {
		ttl = time.Duration(res[1]) * time.Millisecond
	}
	return &LockedError{Name: t.name, TTL: ttl}
}

// Obtain retries TryObtain every retry until it succeeds, attempts run out
// (seed 004's tryNum) or ctx ends; the last *LockedError or ctx's error
// (matching ErrNotObtained) is returned.
func (t *TokenLock) Obtain(ctx context.Context, lease, retry time.Duration, attempts int) error {
	if retry < time.Millisecond {
		return invalid("retry", "must be at least 1ms, got %v", retry)
	}
	if attempts < 1 {
		return invalid("attempts", "must be at least 1, got %d", attempts)
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var err error
	for i := 0; i < attempts; i++ {
		if i > 0 {
			timer.Reset(retry)
			select {
			case <-ctx.Done():
				return fmt.Errorf("%w: %w", ErrNotObtained, ctx.Err())
			case <-timer.C:
			}
		}
		if err = t.TryObtain(ctx, lease); err == nil || !isNotObtained(err) {
			return err
		}
	}
	return err
}

func isNotObtained(err error) bool {
	_, ok := err.(*LockedError)
	return ok
}

// Release deletes the lock if it still holds this handle's token.
// ErrNotHeld (nothing changed) when it does not: it expired, and maybe
// someone else holds it now.
func (t *TokenLock) Release(ctx context.Context) error {
	if err := validateName(t.name); err != nil {
		return err
	}
	code, err := runScript(ctx, t.c.rdb, tokenLockReleaseScript, []string{t.name}, t.token).Int64()
	if err != nil {
		return fmt.Errorf("store: token lock %q: %w", t.name, err)
	}
	if code != 1 {
		return fmt.Errorf("%w: %q by token %s", ErrNotHeld, t.name, t.token)
	}
	return nil
}

// Refresh restarts the lease if the lock still holds this handle's token;
// ErrNotHeld otherwise.
func (t *TokenLock) Refresh(ctx context.Context, lease time.Duration) error {
	if err := t.validate(lease); err != nil {
		return err
	}
	n, err := runScript(ctx, t.c.rdb, tokenLockRefreshScript, []string{t.name}, t.token, lease.Milliseconds()).Int64()
	if err != nil {
		return fmt.Errorf("store: token lock %q: %w", t.name, err)
	}
	if n != 1 {
		return fmt.Errorf("%w: %q by token %s", ErrNotHeld, t.name, t.token)
	}
	return nil
}

package store

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// The console's side of locks: read one as it is, and break one that is
// stuck. Breaking is conditional on the holder the admin saw, because
// between the page load and the click the lock may have been released and
// taken by someone healthy.

// GetLock reads the lock at name in one atomic round trip. ErrNotFound when
// there is no key; ErrWrongKind when the key exists but is not a lock (any
// other type, or a hash that is not in the lock layout).
func (c *Client) GetLock(ctx context.Context, name string) (*LockInfo, error) {
	if err := validateName(name); err != nil {
		return nil, err
	}
	var all *redis.MapStringStringCmd
	var pttl *redis.DurationCmd
	_, err := c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		all = p.HGetAll(ctx, name)
		pttl = p.PTTL(ctx, name)
		return nil
	})
	if isWrongType(err) || isWrongType(all.Err()) {
		return nil, fmt.Errorf("store: lock %q: %w", name, ErrWrongKind)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get lock %q: %w", name, err)
	}
	fields := all.Val()
	if len(fields) == 0 {
		return nil, fmt.Errorf("store: lock %q: %w", name, ErrNotFound)
	}
	info, ok := parseLock(name, fields, pttl.Val())
	if !ok {
		return nil, fmt.Errorf("store: lock %q: %w", name, ErrWrongKind)
	}
	return &info, nil
}

// ForceUnlock deletes the lock at name, whatever its reentry count, only if
// holder (a hash field "<client-id>:<owner>") still holds it, and wakes its
// waiters. ErrNotFound: no such key. ErrHolderChanged: someone else holds it
// now. ErrWrongKind: the key is not a hash. In all three nothing changed.
func (c *Client) ForceUnlock(ctx context.Context, name, holder string) error {
	if err := validateName(name); err != nil {
		return err
	}
	switch {
	case holder == "":
		return invalid("holder", "must not be empty")
	case len(holder) > MaxNameLen:
		return invalid("holder", "must be at most %d bytes, got %d", MaxNameLen, len(holder))
	}
	code, err := lockForceReleaseScript.Run(ctx, c.rdb, []string{name},
		UnlockChannel(name), unlockMessage, holder).Int64()
	if err != nil {
		return fmt.Errorf("store: force unlock %q: %w", name, err)
	}
	return forceReleaseErr(name, holder, code)
}

// forceReleaseErr maps lock_force_release.lua's return codes.
func forceReleaseErr(name, holder string, code int64) error {
	switch code {
	case 1:
		return nil
	case 0:
		return fmt.Errorf("store: force unlock %q: %w", name, ErrNotFound)
	case -1:
		return fmt.Errorf("store: force unlock %q: %w: %s no longer holds it", name, ErrHolderChanged, holder)
	case -2:
		return fmt.Errorf("store: force unlock %q: %w", name, ErrWrongKind)
	}
	return fmt.Errorf("store: force unlock %q: unexpected script reply %d", name, code)
}

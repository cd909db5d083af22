package store

import (
	"context"
	"time"
)

// STUB (owned by the lock work): signatures are the contract; bodies to come.

// parseLock classifies a hash as a lock from its fields and PTTL.
func parseLock(name string, fields map[string]string, pttl time.Duration) (LockInfo, bool) {
	return LockInfo{}, false
}

// GetLock reads one lock; ErrNotFound when name is not a lock.
func (c *Client) GetLock(ctx context.Context, name string) (*LockInfo, error) {
	return nil, ErrNotFound
}

// ForceUnlock breaks the lock at name only if holder still holds it;
// ErrNotFound when there is no lock, ErrHolderChanged when another holds it.
func (c *Client) ForceUnlock(ctx context.Context, name, holder string) error { return ErrNotFound }

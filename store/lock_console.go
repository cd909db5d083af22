package store

import "context"

// STUB (owned by the lock work): signatures are the contract; bodies to come.

// GetLock reads one lock; ErrNotFound when name is not a lock.
func (c *Client) GetLock(ctx context.Context, name string) (*LockInfo, error) { return nil, ErrNotFound }

// ForceUnlock breaks the lock at name only if holder still holds it;
// ErrNotFound when there is no lock, ErrHolderChanged when another holds it.
func (c *Client) ForceUnlock(ctx context.Context, name, holder string) error { return ErrNotFound }

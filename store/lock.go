package store

import "context"

// STUB (owned by the lock work): signatures are the contract; bodies to come.

// LockOptions tunes a lock handle. A nil *LockOptions uses the defaults.
type LockOptions struct{}

// Lock is a handle on one reentrant lock for one owner.
type Lock struct {
	c    *Client
	name string
}

// NewLock returns a handle on the lock stored at name.
func (c *Client) NewLock(name string, opts *LockOptions) *Lock { return &Lock{c: c, name: name} }

// TryLock takes the lock once, without waiting.
func (l *Lock) TryLock(ctx context.Context) error { return ErrNotObtained }

// Lock waits for the lock until ctx ends.
func (l *Lock) Lock(ctx context.Context) error { return ErrNotObtained }

// Unlock releases one level of reentry.
func (l *Lock) Unlock(ctx context.Context) error { return ErrNotHeld }

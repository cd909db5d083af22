package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
)

// The owner in ctx: one actor across handles and lock kinds.
//
// A holder is "<client-id>:<owner>", and handles with the same Owner on one
// Client act as one holder (they re-enter each other's locks, like one Java
// thread in Redisson). The console's wait-for graph joins a waiter to the
// locks held under the same holder, so a deadlock is only seen when both
// sides carry the same owner. WithOwner lets the code that knows the actor
// (a request, a job, an order) say so once, in ctx, instead of threading
// an Owner into every handle it creates.

type ownerKey struct{}

// WithOwner returns a copy of ctx that names owner as the actor of the
// lock calls made with it. A lock handle created without an explicit Owner
// (NewLock, NewSpinLock, NewRWLock, NewFairLock, NewFencedLock) then
// takes, waits for, releases and renews the lock as "<client-id>:<owner>"
// in every call whose ctx carries owner, exactly as a handle created with
// that Owner would; calls without it use the handle's own random owner.
// Release with a ctx that carries the same owner as the acquire. An
// explicit Owner always wins. An empty owner changes nothing; one longer
// than MaxOwnerLen fails the call with ErrInvalid. A TokenLock ignores
// it: its holder is the value it stores (its LockOptions.Owner, else a
// random one), which another actor must not be able to guess.
func WithOwner(ctx context.Context, owner string) context.Context {
	return context.WithValue(ctx, ownerKey{}, owner)
}

// ownerFrom returns the owner WithOwner put in ctx, if any.
func ownerFrom(ctx context.Context) (string, bool) {
	owner, ok := ctx.Value(ownerKey{}).(string)
	return owner, ok && owner != ""
}

// maxOwnerHandles bounds the per-owner handles one handle keeps; beyond it,
// those that hold nothing are dropped (a call still running on a dropped
// one finishes on it, and a later call of its owner gets a fresh handle
// with the same holder, which Redis treats as the same holder).
const maxOwnerHandles = 1024

// byOwner keeps, for one handle made without an Owner, the handles of the
// owners its calls named in ctx.
type byOwner[H comparable] struct {
	make func(owner string) H // a handle with that Owner and the same options
	idle func(H) bool         // holds nothing through this handle

	mu sync.Mutex
	m  map[string]H
}

// pick returns the handle that acts for ctx's owner, or self.
func (b *byOwner[H]) pick(ctx context.Context, self H) H {
	owner, ok := ownerFrom(ctx)
	if !ok {
		return self
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if h, ok := b.m[owner]; ok {
		return h
	}
	if b.m == nil {
		b.m = make(map[string]H)
	}
	if len(b.m) >= maxOwnerHandles {
		for k, h := range b.m {
			if b.idle(h) {
				delete(b.m, k)
			}
		}
	}
	h := b.make(owner)
	b.m[owner] = h
	return h
}

// actor is the handle that acts for ctx's owner (WithOwner) for a handle
// whose per-owner handles are owners; the zero H (nil) when the handle
// acts itself: it has an explicit Owner, or ctx names none.
func actor[H comparable](ctx context.Context, owners *byOwner[H]) H {
	var self H
	if owners == nil {
		return self
	}
	return owners.pick(ctx, self)
}

func newWaitToken() string { return randomHex() }

// randomHex returns 8 random bytes in hex: default owners and wait tokens.
func randomHex() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on Linux
	return hex.EncodeToString(b[:])
}

package store

// STUB (owned by the limiter work): signatures are the contract; bodies to come.

// TokenBucket is a handle on a seed-001 token bucket stored at name.
type TokenBucket struct {
	c    *Client
	name string
}

// TokenBucket returns a handle on the bucket stored at name (the full key,
// e.g. "ratelimit:test" for buckets written by seed 001's client).
func (c *Client) TokenBucket(name string) *TokenBucket { return &TokenBucket{c: c, name: name} }

package store

import "context"

// STUB (owned by the limiter work): signatures are the contract; bodies to come.

// parseTokenBucket classifies a hash as a seed-001 bucket; nowMS is Redis time.
func parseTokenBucket(name string, fields map[string]string, nowMS int64) (LimiterInfo, bool) {
	return LimiterInfo{}, false
}

// GetLimiter reads one limiter; ErrNotFound when name is not a limiter.
func (c *Client) GetLimiter(ctx context.Context, name string) (*LimiterInfo, error) {
	return nil, ErrNotFound
}

// ModifyLimiter changes rate and interval through the kind's modify script
// and returns the new state. Validation errors are *ValidationError.
func (c *Client) ModifyLimiter(ctx context.Context, name string, rate int64, intervalMS float64) (*LimiterInfo, error) {
	return nil, ErrNotFound
}

package store

import "context"

// STUB (owned by the limiter work): signatures are the contract; bodies to come.

// GetLimiter reads one limiter; ErrNotFound when name is not a limiter.
func (c *Client) GetLimiter(ctx context.Context, name string) (*LimiterInfo, error) {
	return nil, ErrNotFound
}

// ModifyLimiter changes rate and interval through the kind's modify script
// and returns the new state. Validation errors are *ValidationError.
func (c *Client) ModifyLimiter(ctx context.Context, name string, rate int64, intervalMS float64) (*LimiterInfo, error) {
	return nil, ErrNotFound
}

package store

import "time"

// STUB (owned by the console-read work): signatures are the contract.

// parseLock classifies a hash as a lock from its fields and PTTL.
func parseLock(name string, fields map[string]string, pttl time.Duration) (LockInfo, bool) {
	return LockInfo{}, false
}

// parseTokenBucket classifies a hash as a seed-001 bucket; nowMS is Redis time.
func parseTokenBucket(name string, fields map[string]string, nowMS int64) (LimiterInfo, bool) {
	return LimiterInfo{}, false
}

package inspect

// The kinds the console lists, in the order its filters offer them. Every
// other list of kinds (the web API's ?kind= filter, the pages' filter
// links, the views' kind-specific rendering) is derived from these two.

// LockKinds are the kinds listed as locks.
func LockKinds() []Kind {
	return []Kind{KindReentrant, KindFairLock, KindFencedLock, KindRWLock, KindTokenLock, KindDeadlineLock}
}

// LimiterKinds are the kinds listed as limiters.
func LimiterKinds() []Kind {
	return []Kind{KindTokenBucket, KindRedissonLimiter, KindCounter}
}

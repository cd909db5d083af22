package main

import "time"

// Default session lifetimes (--session-idle, --session-max-age).
const (
	defaultSessionIdle   = 12 * time.Hour
	defaultSessionMaxAge = 12 * time.Hour
)

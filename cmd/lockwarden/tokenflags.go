package main

import (
	"fmt"
	"time"
)

// minTokenLen is the shortest token accepted. A token is the only secret
// between the network and the admin role; anything shorter than 16 bytes
// is guessable in bulk, and a viewer must not be able to try admin tokens
// offline against anything it can see.
const minTokenLen = 16

// checkTokens refuses tokens too short to resist guessing, saying how to
// make a good one.
func checkTokens(admin, viewer string) error {
	for _, t := range []struct{ flag, env, tok string }{
		{"--admin-token", "LOCKWARDEN_ADMIN_TOKEN", admin},
		{"--viewer-token", "LOCKWARDEN_VIEWER_TOKEN", viewer},
	} {
		if t.tok != "" && len(t.tok) < minTokenLen {
			return fmt.Errorf("%s (or %s) is %d bytes; a token needs at least %d, and 32 random bytes are better: "+
				"generate one with 'openssl rand -base64 32' or 'head -c 32 /dev/urandom | base64'",
				t.flag, t.env, len(t.tok), minTokenLen)
		}
	}
	return nil
}

// Default session lifetimes (--session-idle, --session-max-age).
const (
	defaultSessionIdle   = 12 * time.Hour
	defaultSessionMaxAge = 12 * time.Hour
)

package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/luascripts"
	"github.com/lockwarden/lockwarden/store"
)

// Sessions are browser sign-ins kept in Redis, so every replica sees the
// same ones and ending one ends it everywhere. The cookie holds a random
// id and its signature under the Keyring; the session itself (role, the
// keyed fingerprint of the token signed in with, creation and last use)
// stays in Redis under Keys.Session. A session ends on sign-out, after
// its idle timeout, at its maximum age, or on first use after its role's
// token changed. Each role keeps at most MaxPerRole sessions (an index
// per role, Keys.RoleSessions): a sign-in past that ends the role's oldest,
// so signing in in a loop cannot fill Redis with sessions.
type Sessions struct {
	rdb        redis.UniversalClient
	keys       Keys
	ring       *Keyring
	idle       time.Duration
	maxAge     time.Duration
	maxPerRole int
}

// SessionOptions adjust Sessions; nil or zero fields are the defaults.
type SessionOptions struct {
	// Idle ends a session this long after its last use (default 12 h).
	Idle time.Duration
	// MaxAge ends a session this long after sign-in, however busy
	// (default 12 h).
	MaxAge time.Duration
	// MaxPerRole is how many sessions each role (so each token) keeps;
	// a sign-in past it ends that role's oldest session (default
	// DefaultMaxSessionsPerRole).
	MaxPerRole int
}

// DefaultSessionIdle and DefaultSessionMaxAge are the defaults of
// SessionOptions.
const (
	DefaultSessionIdle   = 12 * time.Hour
	DefaultSessionMaxAge = 12 * time.Hour
	// DefaultMaxSessionsPerRole: a team's browsers and wall displays
	// signed in with one token, with room to spare.
	DefaultMaxSessionsPerRole = 100
)

// ErrNoSession: the cookie names no live session (forged, from another
// deployment, signed out, timed out, or its token was rotated).
var ErrNoSession = errors.New("auth: no such session")

var (
	sessionOpenScript  = store.NewScript(luascripts.Source("auth_session_open"))
	sessionTouchScript = store.NewScript(luascripts.Source("auth_session_touch"))
	sessionEndScript   = store.NewScript(luascripts.Source("auth_session_end"))
)

// sessionRoles are the roles whose sessions are indexed.
var sessionRoles = []string{RoleAdmin.String(), RoleViewer.String()}

// NewSessions keeps sessions in rdb under keys, signed with ring.
func NewSessions(rdb redis.UniversalClient, keys Keys, ring *Keyring, opts *SessionOptions) *Sessions {
	s := &Sessions{rdb: rdb, keys: keys, ring: ring, idle: DefaultSessionIdle, maxAge: DefaultSessionMaxAge,
		maxPerRole: DefaultMaxSessionsPerRole}
	if opts != nil && opts.Idle > 0 {
		s.idle = opts.Idle
	}
	if opts != nil && opts.MaxAge > 0 {
		s.maxAge = opts.MaxAge
	}
	if opts != nil && opts.MaxPerRole > 0 {
		s.maxPerRole = opts.MaxPerRole
	}
	return s
}

// MaxAge is the longest a session lasts: a cookie's lifetime.
func (s *Sessions) MaxAge() time.Duration { return s.maxAge }

// Session is a live session as Check found it.
type Session struct {
	Role    string
	Created time.Time
}

var b64 = base64.RawURLEncoding

// sessionIDLen is the random part of a session, in bytes.
const sessionIDLen = 32

// maxCookieLen bounds what is parsed as a session cookie.
const maxCookieLen = 256

// Open starts a session for role, signed in with the token whose keyed
// fingerprint is tokenFP, and returns the cookie value.
func (s *Sessions) Open(ctx context.Context, role, tokenFP string) (string, error) {
	raw := make([]byte, sessionIDLen)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("auth: random session id: %w", err)
	}
	id := b64.EncodeToString(raw)
	v, err := sessionOpenScript.Run(ctx, s.rdb, []string{s.keys.Session(id), s.keys.RoleSessions(role)},
		role, tokenFP, s.idle.Milliseconds(), s.maxAge.Milliseconds(), id, s.maxPerRole).Result()
	if err != nil {
		return "", fmt.Errorf("auth: opening a session: %w", err)
	}
	row, ok := v.([]any)
	if !ok || len(row) == 0 {
		return "", errors.New("auth: session id already in use") // 2^-256: a broken random source
	}
	if len(row) > 1 {
		// The sessions this one pushed out of the role's index are over;
		// their hashes are only garbage now. A failure leaves them to
		// their expiry.
		ended := make([]string, 0, len(row)-1)
		for _, e := range row[1:] {
			if eid, ok := e.(string); ok {
				ended = append(ended, s.keys.Session(eid))
			}
		}
		_ = s.rdb.Del(ctx, ended...).Err()
	}
	return id + "." + b64.EncodeToString(s.sign(id)), nil
}

func (s *Sessions) sign(id string) []byte { return s.ring.mac("session", id) }

// idOf checks the cookie's signature, so a forged or foreign cookie costs
// no Redis call.
func (s *Sessions) idOf(cookie string) (string, bool) {
	if len(cookie) > maxCookieLen {
		return "", false
	}
	id, sig64, ok := strings.Cut(cookie, ".")
	if !ok || id == "" {
		return "", false
	}
	// The encoded forms are compared: base64 decoding skips CR and LF and
	// accepts stray trailing bits, so decoding first would let cookies
	// other than the issued one through.
	if !hmac.Equal([]byte(sig64), []byte(b64.EncodeToString(s.sign(id)))) {
		return "", false
	}
	return id, true
}

// Check returns the session of cookie and counts this as a use. current
// maps each role to the keyed fingerprint of its token now ("" or absent
// for a role with no token): a session signed in with any other token is
// ended. Any failure to find a live session is ErrNoSession.
func (s *Sessions) Check(ctx context.Context, cookie string, current map[string]string) (Session, error) {
	id, ok := s.idOf(cookie)
	if !ok {
		return Session{}, ErrNoSession
	}
	keys := []string{s.keys.Session(id)}
	argv := []any{s.idle.Milliseconds(), s.maxAge.Milliseconds(), id}
	for role, fp := range current {
		if fp != "" {
			keys = append(keys, s.keys.RoleSessions(role))
			argv = append(argv, role, fp)
		}
	}
	v, err := sessionTouchScript.Run(ctx, s.rdb, keys, argv...).Result()
	if err != nil {
		return Session{}, fmt.Errorf("auth: checking a session: %w", err)
	}
	row, ok := v.([]any)
	if !ok || len(row) != 2 {
		return Session{}, ErrNoSession
	}
	role, _ := row[0].(string)
	created, _ := row[1].(int64)
	return Session{Role: role, Created: time.UnixMilli(created)}, nil
}

// End deletes the session of cookie, for every replica at once. A cookie
// that names no session is no error: there is nothing left to end.
func (s *Sessions) End(ctx context.Context, cookie string) error {
	id, ok := s.idOf(cookie)
	if !ok {
		return nil
	}
	keys := []string{s.keys.Session(id)}
	for _, role := range sessionRoles {
		keys = append(keys, s.keys.RoleSessions(role))
	}
	if err := sessionEndScript.Run(ctx, s.rdb, keys, id).Err(); err != nil {
		return fmt.Errorf("auth: ending a session: %w", err)
	}
	return nil
}

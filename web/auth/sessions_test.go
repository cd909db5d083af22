package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store/redistest"
)

// testKeys is a namespace of the test's own, deleted when it ends.
func testKeys(t *testing.T, rdb *redis.Client) Keys {
	t.Helper()
	k := NewKeys(strings.TrimSuffix(redistest.Prefix(t), ":"))
	t.Cleanup(func() {
		ctx := context.Background()
		it := rdb.Scan(ctx, 0, strings.TrimSuffix(k.Secret(), "secret")+"*", 1000).Iterator()
		for it.Next(ctx) {
			rdb.Del(ctx, it.Val())
		}
	})
	return k
}

func loadRing(t *testing.T, rdb *redis.Client, keys Keys) *Keyring {
	t.Helper()
	r, err := LoadKeyring(t.Context(), rdb, keys)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Replicas over one Redis agree on the secret (the first one stored it);
// another deployment has its own, so its fingerprints and cookies differ.
// A fingerprint is not the token's bare hash, which a viewer could use to
// test guesses at the admin token offline.
func TestKeyringSharedByReplicasNotByDeployments(t *testing.T) {
	rdb := redistest.Client(t)
	keys := testKeys(t, rdb)
	a, b := loadRing(t, rdb, keys), loadRing(t, rdb, keys)
	const tok = "an-admin-token-of-32-characters!"
	if a.Fingerprint(tok) != b.Fingerprint(tok) {
		t.Fatal("two replicas fingerprint the same token differently")
	}
	other := loadRing(t, rdb, testKeys(t, rdb).sub("other"))
	if other.Fingerprint(tok) == a.Fingerprint(tok) {
		t.Fatal("another deployment's secret gives the same fingerprint")
	}
	sum := sha256.Sum256([]byte(tok))
	if fp := a.Fingerprint(tok); strings.HasPrefix(hex.EncodeToString(sum[:]), fp[:8]) {
		t.Fatalf("fingerprint %s is the token's unkeyed SHA-256", fp)
	}
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(a.Fingerprint(tok)) {
		t.Fatalf("fingerprint %q", a.Fingerprint(tok))
	}
}

// namespace is the name NewKeys made k from.
func (k Keys) namespace() string {
	return strings.TrimSuffix(strings.TrimPrefix(k.tag, "lw:{"), "}:")
}

// sub is another namespace beside k's, cleaned up with it.
func (k Keys) sub(name string) Keys {
	return Keys{tag: strings.TrimSuffix(k.tag, "}:") + "-" + name + "}:"}
}

func newSessions(t *testing.T, rdb *redis.Client, keys Keys, opts *SessionOptions) *Sessions {
	t.Helper()
	return NewSessions(rdb, keys, loadRing(t, rdb, keys), opts)
}

var tokensNow = map[string]string{"admin": "fp-admin", "viewer": "fp-viewer"}

// Sign-out on one replica ends the session on every replica: the cookie,
// replayed anywhere afterwards, is refused.
func TestSessionEndsEverywhereOnSignOut(t *testing.T) {
	rdb := redistest.Client(t)
	keys := testKeys(t, rdb)
	one, two := newSessions(t, rdb, keys, nil), newSessions(t, rdb, keys, nil)
	ck, err := one.Open(t.Context(), "admin", "fp-admin")
	if err != nil {
		t.Fatal(err)
	}
	if ss, err := two.Check(t.Context(), ck, tokensNow); err != nil || ss.Role != "admin" {
		t.Fatalf("other replica: %+v, %v", ss, err)
	}
	if err := one.End(t.Context(), ck); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Sessions{one, two} {
		if _, err := s.Check(t.Context(), ck, tokensNow); !errors.Is(err, ErrNoSession) {
			t.Fatalf("cookie after sign-out: err = %v, want ErrNoSession", err)
		}
	}
}

// Changing a role's token ends the sessions signed in with the old one,
// and only that role's.
func TestSessionEndsWhenItsTokenIsRotated(t *testing.T) {
	rdb := redistest.Client(t)
	keys := testKeys(t, rdb)
	s := newSessions(t, rdb, keys, nil)
	admin, _ := s.Open(t.Context(), "admin", "fp-admin")
	viewer, _ := s.Open(t.Context(), "viewer", "fp-viewer")
	rotated := map[string]string{"admin": "fp-admin-2", "viewer": "fp-viewer"}
	if _, err := s.Check(t.Context(), admin, rotated); !errors.Is(err, ErrNoSession) {
		t.Fatalf("admin session after the admin token changed: %v", err)
	}
	if _, err := s.Check(t.Context(), admin, tokensNow); !errors.Is(err, ErrNoSession) {
		t.Fatalf("an ended session came back with the old token: %v", err)
	}
	if _, err := s.Check(t.Context(), viewer, rotated); err != nil {
		t.Fatalf("viewer session after the admin token changed: %v", err)
	}
	// A role whose token was removed keeps no session either.
	if _, err := s.Check(t.Context(), viewer, map[string]string{"admin": "fp-admin-2"}); !errors.Is(err, ErrNoSession) {
		t.Fatalf("viewer session after the viewer token was removed: %v", err)
	}
}

// sessionKey is the Redis key behind a cookie.
func sessionKey(keys Keys, cookie string) string {
	id, _, _ := strings.Cut(cookie, ".")
	return keys.Session(id)
}

// A session ends after its idle timeout, and at its maximum age however
// busy it is. The test moves the session's times back in Redis rather than
// waiting: the script compares them with Redis' own clock.
func TestSessionIdleTimeoutAndMaxAge(t *testing.T) {
	rdb := redistest.Client(t)
	keys := testKeys(t, rdb)
	s := newSessions(t, rdb, keys, &SessionOptions{Idle: time.Hour, MaxAge: 2 * time.Hour})
	ctx := t.Context()
	nowMS := redistest.NowMS(t, rdb)

	idle, _ := s.Open(ctx, "admin", "fp-admin")
	rdb.HSet(ctx, sessionKey(keys, idle), "seen", nowMS-time.Hour.Milliseconds()-1)
	if _, err := s.Check(ctx, idle, tokensNow); !errors.Is(err, ErrNoSession) {
		t.Fatalf("idle for over an hour: %v", err)
	}

	busy, _ := s.Open(ctx, "admin", "fp-admin")
	rdb.HSet(ctx, sessionKey(keys, busy), "created", nowMS-2*time.Hour.Milliseconds()-1)
	if _, err := s.Check(ctx, busy, tokensNow); !errors.Is(err, ErrNoSession) {
		t.Fatalf("used a moment ago but over its maximum age: %v", err)
	}

	fresh, _ := s.Open(ctx, "admin", "fp-admin")
	rdb.HSet(ctx, sessionKey(keys, fresh), "created", nowMS-90*time.Minute.Milliseconds())
	if _, err := s.Check(ctx, fresh, tokensNow); err != nil {
		t.Fatalf("within both limits: %v", err)
	}
	// Its TTL is what is left of its maximum age, not a fresh idle hour.
	if ttl := rdb.PTTL(ctx, sessionKey(keys, fresh)).Val(); ttl > 31*time.Minute || ttl <= 0 {
		t.Fatalf("TTL %v after a use 30 min before its maximum age", ttl)
	}
}

// A cookie edited by its holder, made up, or issued by another deployment
// over other Redis data names no session.
func TestForgedAndForeignCookiesRefused(t *testing.T) {
	rdb := redistest.Client(t)
	keys := testKeys(t, rdb)
	s := newSessions(t, rdb, keys, nil)
	ck, _ := s.Open(t.Context(), "viewer", "fp-viewer")
	id, sig, _ := strings.Cut(ck, ".")
	// Another id: its first character changed (an id that began with "A"
	// made "A"+id[1:] the real cookie, 1 run in 64).
	other := "A" + id[1:]
	if id[0] == 'A' {
		other = "B" + id[1:]
	}
	foreign := newSessions(t, rdb, keys.sub("elsewhere"), nil)
	theirs, _ := foreign.Open(t.Context(), "admin", "fp-admin")
	for name, c := range map[string]string{
		"other id, same signature": other + "." + sig,
		"no signature":             id,
		"made up":                  "x.y",
		"too long":                 strings.Repeat("a", 300) + "." + sig,
		"another deployment's":     theirs,
	} {
		if _, err := s.Check(t.Context(), c, tokensNow); !errors.Is(err, ErrNoSession) {
			t.Errorf("%s cookie: err = %v, want ErrNoSession", name, err)
		}
	}
	if _, err := s.Check(t.Context(), ck, tokensNow); err != nil {
		t.Fatalf("the real cookie: %v", err)
	}
}

// Each role keeps its newest MaxPerRole sessions: a sign-in past them ends
// that role's oldest, on every replica, and no other role's. A signed-out
// session no longer counts.
func TestSessionsCappedPerRole(t *testing.T) {
	rdb := redistest.Client(t)
	keys := testKeys(t, rdb)
	opts := &SessionOptions{MaxPerRole: 5}
	s, other := newSessions(t, rdb, keys, opts), newSessions(t, rdb, keys, opts)
	ctx := t.Context()
	admin, err := s.Open(ctx, "admin", "fp-admin")
	if err != nil {
		t.Fatal(err)
	}
	var viewers []string
	for range 8 {
		ck, err := s.Open(ctx, "viewer", "fp-viewer")
		if err != nil {
			t.Fatal(err)
		}
		viewers = append(viewers, ck)
	}
	for i, ck := range viewers {
		if n := rdb.Exists(ctx, sessionKey(keys, ck)).Val(); n != map[bool]int64{true: 0, false: 1}[i < 3] {
			t.Fatalf("viewer session %d of 8, cap 5: its key exists %d", i, n)
		}
	}
	for i, ck := range viewers {
		_, err := other.Check(ctx, ck, tokensNow)
		if ended := errors.Is(err, ErrNoSession); ended != (i < 3) {
			t.Fatalf("viewer session %d of 8, cap 5: err %v", i, err)
		}
	}
	if _, err := other.Check(ctx, admin, tokensNow); err != nil {
		t.Fatalf("the admin's session after the viewer's sign-ins: %v", err)
	}
	if n := rdb.ZCard(ctx, keys.RoleSessions("viewer")).Val(); n != 5 {
		t.Fatalf("viewer index holds %d sessions, want 5", n)
	}
	if err := s.End(ctx, viewers[7]); err != nil {
		t.Fatal(err)
	}
	if n := rdb.ZCard(ctx, keys.RoleSessions("viewer")).Val(); n != 4 {
		t.Fatalf("after a sign-out the index holds %d, want 4", n)
	}
	if _, err := s.Open(ctx, "viewer", "fp-viewer"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Check(ctx, viewers[3], tokensNow); err != nil {
		t.Fatalf("the oldest live session, with room after a sign-out: %v", err)
	}
}

// A session opened before sessions were indexed (no "ix" field) is not
// ended for missing from its role's index.
func TestSessionWithoutIndexStillValid(t *testing.T) {
	rdb := redistest.Client(t)
	keys := testKeys(t, rdb)
	s := newSessions(t, rdb, keys, nil)
	ck, err := s.Open(t.Context(), "viewer", "fp-viewer")
	if err != nil {
		t.Fatal(err)
	}
	id, _, _ := strings.Cut(ck, ".")
	rdb.HDel(t.Context(), keys.Session(id), "ix")
	rdb.ZRem(t.Context(), keys.RoleSessions("viewer"), id)
	if _, err := s.Check(t.Context(), ck, tokensNow); err != nil {
		t.Fatalf("an unindexed session: %v", err)
	}
}

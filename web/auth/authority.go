package auth

import (
	"context"
	"crypto/hmac"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// SessionCookie is the browser session's cookie name.
	SessionCookie = "lw_session"
	// maxTokenLen bounds a submitted token; longer input is not a token.
	maxTokenLen = 1024
)

// Authority knows the console's tokens, keeps its sessions (Sessions) and
// limits token guessing (Failures), all in Redis so replicas agree.
type Authority struct {
	adminToken, viewerToken string
	rdb                     redis.UniversalClient
	keys                    Keys
	sessionOpts             *SessionOptions
	failures                *Failures
	signIns                 SignIns

	mu       sync.Mutex
	ring     *Keyring // loaded from Redis on first need
	sessions *Sessions
}

// Options are where an Authority keeps its state and its limits.
type Options struct {
	// Redis holds the signing secret, sessions and failure counts;
	// required unless both tokens are "" (local mode).
	Redis redis.UniversalClient
	// Namespace separates consoles sharing a Redis (see NewKeys).
	Namespace string
	Sessions  *SessionOptions
	Failures  *FailureOptions
}

// New is the authority over the two tokens ("" for none).
func New(adminToken, viewerToken string, opts Options) *Authority {
	keys := NewKeys(opts.Namespace)
	return &Authority{adminToken: adminToken, viewerToken: viewerToken, rdb: opts.Redis, keys: keys,
		sessionOpts: opts.Sessions, failures: NewFailures(opts.Redis, keys, opts.Failures)}
}

// LocalMode: no token configured at all. CheckExposure has allowed that
// only on a loopback listener.
func (a *Authority) LocalMode() bool { return a.adminToken == "" && a.viewerToken == "" }

// Failures is the guessing limiter, for /metrics, alerts and the audit
// trail's summaries.
func (a *Authority) Failures() *Failures { return a.failures }

// SignIns is the summary of successful sign-ins, for the audit trail.
func (a *Authority) SignIns() *SignIns { return &a.signIns }

// RoleOf compares tok with both configured tokens in constant time; both
// comparisons always run so timing does not tell which one came close.
func (a *Authority) RoleOf(tok string) Role {
	if tok == "" || len(tok) > maxTokenLen {
		return RoleNone
	}
	admin := a.adminToken != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(a.adminToken)) == 1
	viewer := a.viewerToken != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(a.viewerToken)) == 1
	switch {
	case admin:
		return RoleAdmin
	case viewer:
		return RoleViewer
	}
	return RoleNone
}

// state loads the signing secret once (the first request after start,
// retried until Redis answers) and returns it with the session store.
func (a *Authority) state(ctx context.Context) (*Keyring, *Sessions, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ring == nil {
		ring, err := LoadKeyring(ctx, a.rdb, a.keys)
		if err != nil {
			return nil, nil, unavailable(err)
		}
		a.ring, a.sessions = ring, NewSessions(a.rdb, a.keys, ring, a.sessionOpts)
	}
	return a.ring, a.sessions, nil
}

// Fingerprint names tok in the audit trail and logs: keyed with the
// stored secret (Keyring.Fingerprint), so it cannot be checked offline.
func (a *Authority) Fingerprint(ctx context.Context, tok string) (string, error) {
	ring, _, err := a.state(ctx)
	if err != nil {
		return "", err
	}
	return ring.Fingerprint(tok), nil
}

// Sign is a MAC (16 hex digits) of msg for purpose under the stored
// secret: for text the console puts in its own links and must recognise
// when it comes back (a banner naming the object just changed).
func (a *Authority) Sign(ctx context.Context, purpose, msg string) (string, error) {
	ring, _, err := a.state(ctx)
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(ring.mac("link:"+purpose, msg)[:8]), nil
}

// Verify reports whether sig is Sign's for purpose and msg.
func (a *Authority) Verify(ctx context.Context, purpose, msg, sig string) bool {
	want, err := a.Sign(ctx, purpose, msg)
	return err == nil && hmac.Equal([]byte(want), []byte(sig))
}

// current maps each role with a token to that token's fingerprint: a
// session signed in with any other token has ended.
func (a *Authority) current(ring *Keyring) map[string]string {
	m := map[string]string{}
	if a.adminToken != "" {
		m[RoleAdmin.String()] = ring.Fingerprint(a.adminToken)
	}
	if a.viewerToken != "" {
		m[RoleViewer.String()] = ring.Fingerprint(a.viewerToken)
	}
	return m
}

// sourceOf is the address failures are counted by: the peer, never a
// forwarded-for header (the client's word).
func sourceOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return Source(host)
}

// checkToken runs tok past the guessing limits and returns its identity:
// a CodeLimited refusal with RetryAfter while the source waits, ErrUnauthenticated for
// a wrong token (counted).
func (a *Authority) checkToken(ctx context.Context, r *http.Request, tok string, via Via, now time.Time) (Identity, error) {
	src := sourceOf(r)
	wait, err := a.failures.Wait(ctx, src, now)
	if err != nil {
		return Identity{}, unavailable(err)
	}
	if wait > 0 {
		return Identity{}, tooManyFailures(wait)
	}
	role := a.RoleOf(tok)
	if role == RoleNone {
		if _, err := a.failures.Fail(ctx, src, via, now); err != nil {
			return Identity{}, unavailable(err)
		}
		return Identity{}, unauthenticated("the token is not valid")
	}
	fp, err := a.Fingerprint(ctx, tok)
	if err != nil {
		return Identity{}, err
	}
	return Identity{Role: role, Fingerprint: fp, Bearer: via == ViaBearer}, nil
}

// SignIn checks a token submitted on the sign-in page and starts a
// session, counted in SignIns. A wrong token is ErrUnauthenticated; a
// source that has guessed too often gets a CodeLimited refusal with
// RetryAfter, the right token included.
func (a *Authority) SignIn(ctx context.Context, r *http.Request, tok string, now time.Time) (*http.Cookie, Identity, error) {
	id, err := a.checkToken(ctx, r, tok, ViaSignIn, now)
	if err != nil {
		return nil, Identity{}, err
	}
	_, sessions, err := a.state(ctx)
	if err != nil {
		return nil, Identity{}, err
	}
	v, err := sessions.Open(ctx, id.Role.String(), id.Fingerprint)
	if err != nil {
		return nil, Identity{}, unavailable(err)
	}
	a.signIns.note(id, sourceOf(r), now)
	return SessionCookieOf(v, int(sessions.MaxAge()/time.Second), SecureRequest(r)), id, nil
}

// SignOut ends the session r carries, on every replica.
func (a *Authority) SignOut(ctx context.Context, r *http.Request) error {
	ck, err := r.Cookie(SessionCookie)
	if err != nil || a.LocalMode() {
		return nil
	}
	_, sessions, err := a.state(ctx)
	if err != nil {
		return err
	}
	if err := sessions.End(ctx, ck.Value); err != nil {
		return unavailable(err)
	}
	return nil
}

// SessionCookieOf is the session cookie with value (maxAge < 0 deletes
// it). secure: the browser reached the console over TLS.
func SessionCookieOf(value string, maxAge int, secure bool) *http.Cookie {
	return &http.Cookie{
		Name:     SessionCookie,
		Value:    value,
		Path:     "/",
		MaxAge:   maxAge,
		Secure:   secure,
		HttpOnly: true,
		SameSite: http.SameSiteStrictMode,
	}
}

// SecureRequest says the browser reached the console over TLS, directly
// (tls) or through a proxy that says so. Trusting X-Forwarded-Proto here
// can only make the cookie stricter.
func SecureRequest(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// Identify decides who sent r. A wrong Bearer token is refused
// (ErrUnauthenticated; the caller audits it as a failed sign-in), and so
// is any token from a source that must wait (RetryAfter); a session
// cookie that names no live session just means anonymous.
func (a *Authority) Identify(ctx context.Context, r *http.Request, now time.Time) (Identity, error) {
	if tok, ok := BearerToken(r); ok {
		if a.LocalMode() {
			return Identity{Role: RoleAdmin, Fingerprint: "local", Bearer: true}, nil
		}
		return a.checkToken(ctx, r, tok, ViaBearer, now)
	}
	if a.LocalMode() {
		return Identity{Role: RoleAdmin, Fingerprint: "local"}, nil
	}
	ck, err := r.Cookie(SessionCookie)
	if err != nil {
		return Identity{}, nil
	}
	ring, sessions, err := a.state(ctx)
	if err != nil {
		return Identity{}, err
	}
	cur := a.current(ring)
	ss, err := sessions.Check(ctx, ck.Value, cur)
	if errors.Is(err, ErrNoSession) {
		return Identity{}, nil
	}
	if err != nil {
		return Identity{}, unavailable(err)
	}
	role := ParseRole(ss.Role)
	return Identity{Role: role, Fingerprint: cur[ss.Role]}, nil
}

// PublicPath needs no sign-in: probes, the sign-in page itself and the
// files it loads.
func PublicPath(p string) bool {
	return p == "/healthz" || p == "/readyz" || p == "/login" || p == "/favicon.ico" || strings.HasPrefix(p, "/static/")
}

// Authorize enforces the roles: reads need viewer, everything else admin.
// An anonymous request gets ErrUnauthenticated (the caller may send a
// browser to the sign-in page instead).
func Authorize(id Identity, method, path string) error {
	if PublicPath(path) || (path == "/logout" && method == http.MethodPost) {
		return nil
	}
	if id.Role == RoleNone {
		return unauthenticated("sign in first: send 'Authorization: Bearer <token>' or use the sign-in page")
	}
	if !IsSafeMethod(method) && id.Role != RoleAdmin {
		return forbidden("this action needs the admin role; you are signed in as " + id.Role.String())
	}
	return nil
}

// SafeNext keeps the post-sign-in redirect on this console: a local path,
// never "//host" or "/\host" (which browsers treat as another origin).
func SafeNext(next string) string {
	if len(next) > 2048 || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") ||
		strings.HasPrefix(next, `/\`) || strings.ContainsAny(next, "\r\n\t") {
		return "/"
	}
	return next
}

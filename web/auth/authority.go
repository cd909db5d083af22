package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

const (
	// SessionCookie is the browser session's cookie name.
	SessionCookie     = "lw_session"
	defaultSessionTTL = 12 * time.Hour
	// maxTokenLen bounds a submitted token; longer input is not a token.
	maxTokenLen = 1024
)

// Authority knows the console's tokens and signs its sessions.
type Authority struct {
	adminToken, viewerToken string
	sessionKey              []byte
	sessionTTL              time.Duration
}

// New is the authority over the two tokens ("" for none); sessionTTL is
// how long a browser sign-in lasts (12 h when 0 or less).
func New(adminToken, viewerToken string, sessionTTL time.Duration) *Authority {
	if sessionTTL <= 0 {
		sessionTTL = defaultSessionTTL
	}
	return &Authority{adminToken: adminToken, viewerToken: viewerToken,
		sessionKey: sessionKeyFor(adminToken, viewerToken), sessionTTL: sessionTTL}
}

// LocalMode: no token configured at all. CheckExposure has allowed that
// only on a loopback listener.
func (a *Authority) LocalMode() bool { return a.adminToken == "" && a.viewerToken == "" }

// SessionTTL is how long a browser sign-in lasts.
func (a *Authority) SessionTTL() time.Duration { return a.sessionTTL }

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

// sessionKeyFor derives the cookie signing key. From the tokens when there
// are any, so sessions survive a restart and all end when a token is
// rotated; otherwise random for this process (only local mode, which needs
// no sessions).
func sessionKeyFor(admin, viewer string) []byte {
	if admin == "" && viewer == "" {
		k := make([]byte, 32)
		if _, err := rand.Read(k); err != nil {
			panic(err)
		}
		return k
	}
	m := hmac.New(sha256.New, []byte("lockwarden session key v1"))
	m.Write([]byte(admin))
	m.Write([]byte{0})
	m.Write([]byte(viewer))
	return m.Sum(nil)
}

// Session is what the cookie carries: role, token fingerprint and expiry,
// signed so the browser cannot change any of them.
type Session struct {
	Role        Role
	Fingerprint string
	Expires     time.Time
}

var b64 = base64.RawURLEncoding

// SignSession is the cookie value of ss.
func (a *Authority) SignSession(ss Session) string {
	payload := ss.Role.String() + "|" + ss.Fingerprint + "|" + strconv.FormatInt(ss.Expires.Unix(), 10)
	m := hmac.New(sha256.New, a.sessionKey)
	m.Write([]byte(payload))
	return b64.EncodeToString([]byte(payload)) + "." + b64.EncodeToString(m.Sum(nil))
}

// ErrBadSession: a session cookie that is not one of ours, or expired.
var ErrBadSession = errors.New("auth: invalid session")

// VerifySession reads a cookie value SignSession made and that has not
// expired at now.
func (a *Authority) VerifySession(v string, now time.Time) (Session, error) {
	if len(v) > 512 {
		return Session{}, ErrBadSession
	}
	p64, sig64, ok := strings.Cut(v, ".")
	if !ok {
		return Session{}, ErrBadSession
	}
	payload, err1 := b64.DecodeString(p64)
	sig, err2 := b64.DecodeString(sig64)
	if err1 != nil || err2 != nil {
		return Session{}, ErrBadSession
	}
	m := hmac.New(sha256.New, a.sessionKey)
	m.Write(payload)
	if !hmac.Equal(sig, m.Sum(nil)) {
		return Session{}, ErrBadSession
	}
	parts := strings.Split(string(payload), "|")
	if len(parts) != 3 {
		return Session{}, ErrBadSession
	}
	exp, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return Session{}, ErrBadSession
	}
	ss := Session{Role: ParseRole(parts[0]), Fingerprint: parts[1], Expires: time.Unix(exp, 0)}
	if ss.Role == RoleNone || !now.Before(ss.Expires) {
		return Session{}, ErrBadSession
	}
	return ss, nil
}

// SignIn checks a token submitted on the sign-in page. On success it
// returns the new session's cookie and who the browser now is; a wrong
// token is RoleNone.
func (a *Authority) SignIn(tok string, now time.Time, secure bool) (*http.Cookie, Identity) {
	r := a.RoleOf(tok)
	if r == RoleNone {
		return nil, Identity{}
	}
	id := Identity{Role: r, Fingerprint: Fingerprint(tok)}
	v := a.SignSession(Session{Role: r, Fingerprint: id.Fingerprint, Expires: now.Add(a.sessionTTL)})
	return SessionCookieOf(v, int(a.sessionTTL/time.Second), secure), id
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
// (ErrUnauthenticated; the caller audits it as a failed sign-in); a bad or
// expired session cookie just means anonymous.
func (a *Authority) Identify(r *http.Request, now time.Time) (Identity, error) {
	if tok, ok := BearerToken(r); ok {
		if a.LocalMode() {
			return Identity{Role: RoleAdmin, Fingerprint: "local", Bearer: true}, nil
		}
		role := a.RoleOf(tok)
		if role == RoleNone {
			return Identity{}, unauthenticated("the Bearer token is not valid")
		}
		return Identity{Role: role, Fingerprint: Fingerprint(tok), Bearer: true}, nil
	}
	if a.LocalMode() {
		return Identity{Role: RoleAdmin, Fingerprint: "local"}, nil
	}
	if ck, err := r.Cookie(SessionCookie); err == nil {
		if ss, err := a.VerifySession(ck.Value, now); err == nil {
			return Identity{Role: ss.Role, Fingerprint: ss.Fingerprint}, nil
		}
	}
	return Identity{}, nil
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

package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// Access model. Two roles: admin may do everything, viewer may read pages,
// the API and the websocket (a wall display). API clients authenticate each
// request with "Authorization: Bearer <token>"; browsers sign in once on
// /login and then carry a signed session cookie. With no token configured
// and a loopback listener the console is in local mode: everyone who can
// reach it is an admin (that is `make run`); Open refuses any other
// listener without an admin token.

type role int

const (
	roleNone role = iota
	roleViewer
	roleAdmin
)

func (r role) String() string {
	switch r {
	case roleAdmin:
		return "admin"
	case roleViewer:
		return "viewer"
	}
	return ""
}

func parseRole(s string) role {
	switch s {
	case "admin":
		return roleAdmin
	case "viewer":
		return roleViewer
	}
	return roleNone
}

// identity is who sent a request, as authenticate decided.
type identity struct {
	Role role
	// Fingerprint names the token used without revealing it; "local" in
	// local mode, "" when anonymous.
	Fingerprint string
	// Bearer is true when the request authenticated with an Authorization
	// header (an API client, which has no session to sign out of).
	Bearer bool
}

const identityKey = "lw.identity"

func identityOf(c echo.Context) identity {
	id, _ := c.Get(identityKey).(identity)
	return id
}

const (
	sessionCookie     = "lw_session"
	defaultSessionTTL = 12 * time.Hour
	// maxTokenLen bounds a submitted token; longer input is not a token.
	maxTokenLen = 1024
)

// fingerprint identifies a token in logs and the audit trail: the first 8
// hex digits of its SHA-256, enough to tell tokens apart, useless to
// recover one.
func fingerprint(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:4])
}

// localMode: no token configured at all. Open has already checked the
// listener is loopback in that case.
func (s *Server) localMode() bool {
	return s.cfg.AdminToken == "" && s.cfg.ViewerToken == ""
}

// tokenRole compares tok with both configured tokens in constant time; both
// comparisons always run so timing does not tell which one came close.
func (s *Server) tokenRole(tok string) role {
	if tok == "" || len(tok) > maxTokenLen {
		return roleNone
	}
	admin := s.cfg.AdminToken != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.AdminToken)) == 1
	viewer := s.cfg.ViewerToken != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.ViewerToken)) == 1
	switch {
	case admin:
		return roleAdmin
	case viewer:
		return roleViewer
	}
	return roleNone
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

// session is what the cookie carries: role, token fingerprint and expiry,
// signed so the browser cannot change any of them.
type session struct {
	Role        role
	Fingerprint string
	Expires     time.Time
}

var b64 = base64.RawURLEncoding

func (s *Server) signSession(ss session) string {
	payload := ss.Role.String() + "|" + ss.Fingerprint + "|" + strconv.FormatInt(ss.Expires.Unix(), 10)
	m := hmac.New(sha256.New, s.sessionKey)
	m.Write([]byte(payload))
	return b64.EncodeToString([]byte(payload)) + "." + b64.EncodeToString(m.Sum(nil))
}

var errBadSession = errors.New("invalid session")

func (s *Server) verifySession(v string, now time.Time) (session, error) {
	if len(v) > 512 {
		return session{}, errBadSession
	}
	p64, sig64, ok := strings.Cut(v, ".")
	if !ok {
		return session{}, errBadSession
	}
	payload, err1 := b64.DecodeString(p64)
	sig, err2 := b64.DecodeString(sig64)
	if err1 != nil || err2 != nil {
		return session{}, errBadSession
	}
	m := hmac.New(sha256.New, s.sessionKey)
	m.Write(payload)
	if !hmac.Equal(sig, m.Sum(nil)) {
		return session{}, errBadSession
	}
	parts := strings.Split(string(payload), "|")
	if len(parts) != 3 {
		return session{}, errBadSession
	}
	exp, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return session{}, errBadSession
	}
	ss := session{Role: parseRole(parts[0]), Fingerprint: parts[1], Expires: time.Unix(exp, 0)}
	if ss.Role == roleNone || !now.Before(ss.Expires) {
		return session{}, errBadSession
	}
	return ss, nil
}

func (s *Server) sessionTTL() time.Duration {
	if s.cfg.SessionTTL > 0 {
		return s.cfg.SessionTTL
	}
	return defaultSessionTTL
}

// secureRequest says the browser reached us over TLS, directly or through
// a proxy that says so. Trusting X-Forwarded-Proto here can only make the
// cookie stricter.
func secureRequest(c echo.Context) bool {
	return c.IsTLS() || strings.EqualFold(c.Request().Header.Get(echo.HeaderXForwardedProto), "https")
}

func (s *Server) setSessionCookie(c echo.Context, value string, maxAge int) {
	c.SetCookie(&http.Cookie{
		Name:     sessionCookie,
		Value:    value,
		Path:     "/",
		MaxAge:   maxAge,
		Secure:   secureRequest(c),
		HttpOnly: true,
		SameSite: http.SameSiteStrictMode,
	})
}

// authenticate decides the identity of every request. A wrong Bearer token
// is refused at once (401) and audited as a failed sign-in; a bad or
// expired session cookie just means anonymous.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		var id identity
		if tok, ok := bearerToken(c.Request()); ok {
			switch {
			case s.localMode():
				id = identity{Role: roleAdmin, Fingerprint: "local", Bearer: true}
			default:
				r := s.tokenRole(tok)
				if r == roleNone {
					he := &httpError{Status: http.StatusUnauthorized, Message: "the Bearer token is not valid"}
					s.auditFailedSignIn(c, "bearer", he.Message)
					return he
				}
				id = identity{Role: r, Fingerprint: fingerprint(tok), Bearer: true}
			}
		} else if s.localMode() {
			id = identity{Role: roleAdmin, Fingerprint: "local"}
		} else if ck, err := c.Cookie(sessionCookie); err == nil {
			if ss, err := s.verifySession(ck.Value, time.Now()); err == nil {
				id = identity{Role: ss.Role, Fingerprint: ss.Fingerprint}
			}
		}
		c.Set(identityKey, id)
		return next(c)
	}
}

// publicPath needs no sign-in: probes, the sign-in page itself and the
// files it loads.
func publicPath(p string) bool {
	return p == "/healthz" || p == "/readyz" || p == "/login" || p == "/favicon.ico" || strings.HasPrefix(p, "/static/")
}

// authorize enforces the roles: reads need viewer, everything else admin.
// Anonymous browsers are sent to the sign-in page; API clients get 401.
func (s *Server) authorize(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if publicPath(r.URL.Path) || (r.URL.Path == "/logout" && r.Method == http.MethodPost) {
			return next(c)
		}
		id := identityOf(c)
		if id.Role == roleNone {
			if isSafeMethod(r.Method) && !wantsJSON(c) && r.URL.Path != "/ws" && r.URL.Path != "/metrics" {
				return c.Redirect(http.StatusSeeOther, "/login?next="+urlQueryEscape(r.URL.RequestURI()))
			}
			return &httpError{Status: http.StatusUnauthorized,
				Message: "sign in first: send 'Authorization: Bearer <token>' or use the sign-in page"}
		}
		if !isSafeMethod(r.Method) && id.Role != roleAdmin {
			return &httpError{Status: http.StatusForbidden, Message: "this action needs the admin role; you are signed in as " + id.Role.String()}
		}
		return next(c)
	}
}

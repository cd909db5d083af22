// Package auth decides who a console request comes from and whether the
// console answers it at all: the two roles and their tokens, browser
// sessions kept in Redis, the limits on token guessing, the Host
// allow-list (DNS rebinding), the cross-origin rule for state changes, the
// security response headers, and the refusal of an exposed console without
// an admin token.
//
// It works on net/http requests and headers and keeps its state in Redis
// (Keys): the web package's middleware calls it and maps its refusals
// (*inspect.Error, refusal.go) to responses. Of lockwarden it imports only
// store (to send scripts once), store/inspect (the error type) and
// luascripts.
package auth

import (
	"context"
	"net/http"
	"strings"
)

// Access model. Two roles: admin may do everything, viewer may read pages,
// the API and the websocket (a wall display). API clients authenticate each
// request with "Authorization: Bearer <token>"; browsers sign in once on
// /login and then carry a signed session cookie. With no token configured
// and a loopback listener the console is in local mode: everyone who can
// reach it is an admin (that is `make run`); CheckExposure refuses any
// other listener without an admin token.

// Role is what a request may do.
type Role int

const (
	RoleNone Role = iota
	RoleViewer
	RoleAdmin
)

func (r Role) String() string {
	switch r {
	case RoleAdmin:
		return "admin"
	case RoleViewer:
		return "viewer"
	}
	return ""
}

// ParseRole is the inverse of Role.String; RoleNone for anything else.
func ParseRole(s string) Role {
	switch s {
	case "admin":
		return RoleAdmin
	case "viewer":
		return RoleViewer
	}
	return RoleNone
}

// Identity is who sent a request, as Authority.Identify decided.
type Identity struct {
	Role Role
	// Fingerprint names the token used without revealing it; "local" in
	// local mode, "" when anonymous.
	Fingerprint string
	// Bearer is true when the request authenticated with an Authorization
	// header (an API client, which has no session to sign out of).
	Bearer bool
}

type identityKey struct{}

// WithIdentity returns ctx carrying id.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityOf is the identity WithIdentity put in ctx; the zero Identity
// (anonymous) when there is none.
func IdentityOf(ctx context.Context) Identity {
	id, _ := ctx.Value(identityKey{}).(Identity)
	return id
}

// IsSafeMethod: the methods that change nothing (reads, and what browsers
// send before them).
func IsSafeMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return true
	}
	return false
}

// BearerToken returns the token of an "Authorization: Bearer" header.
func BearerToken(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	const prefix = "bearer "
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", false
	}
	return strings.TrimSpace(h[len(prefix):]), true
}

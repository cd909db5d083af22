package auth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestSessionSignedAndExpiring(t *testing.T) {
	a := New("admin-token", "viewer-token", time.Hour)
	now := time.Now()
	v := a.SignSession(Session{Role: RoleViewer, Fingerprint: "x", Expires: now.Add(time.Minute)})
	if ss, err := a.VerifySession(v, now); err != nil || ss.Role != RoleViewer {
		t.Fatalf("verify: %+v %v", ss, err)
	}
	if _, err := a.VerifySession(v, now.Add(2*time.Minute)); !errors.Is(err, ErrBadSession) {
		t.Error("an expired session verified")
	}
	if _, err := New("other-admin", "", 0).VerifySession(v, now); err == nil {
		t.Error("a session verified under another token's key")
	}
	tampered := []byte(v)
	tampered[0] ^= 1
	if _, err := a.VerifySession(string(tampered), now); err == nil {
		t.Error("a tampered session verified")
	}
}

func TestIdentifyAndAuthorize(t *testing.T) {
	a := New("admin-token", "viewer-token", 0)
	req := func(method, path, tok string) *http.Request {
		r := httptest.NewRequest(method, path, nil)
		if tok != "" {
			r.Header.Set("Authorization", "Bearer "+tok)
		}
		return r
	}
	if _, err := a.Identify(req("GET", "/", "wrong"), time.Now()); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("wrong token: %v", err)
	}
	viewer, _ := a.Identify(req("GET", "/", "viewer-token"), time.Now())
	if viewer.Role != RoleViewer || viewer.Fingerprint != Fingerprint("viewer-token") || !viewer.Bearer {
		t.Errorf("viewer = %+v", viewer)
	}
	if err := Authorize(viewer, "PUT", "/api/limiters/x"); !errors.Is(err, ErrForbidden) {
		t.Errorf("viewer PUT: %v", err)
	}
	if err := Authorize(Identity{}, "GET", "/locks"); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("anonymous GET: %v", err)
	}
	if err := Authorize(Identity{}, "GET", "/static/app.css"); err != nil {
		t.Errorf("anonymous static: %v", err)
	}
	local, _ := New("", "", 0).Identify(req("POST", "/", ""), time.Now())
	if local.Role != RoleAdmin || local.Fingerprint != "local" {
		t.Errorf("local mode = %+v", local)
	}
}

func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{"/locks?x=1": "/locks?x=1", "//evil": "/", `/\evil`: "/", "http://x": "/", "/a\nb": "/"} {
		if got := SafeNext(in); got != want {
			t.Errorf("SafeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestHostPolicy(t *testing.T) {
	p := BuildHostPolicy("", nil, []string{"console.example:8443", "wall.example"})
	for host, want := range map[string]bool{"localhost:1234": true, "console.example:8443": true, "console.example": false,
		"wall.example:99": true, "evil.example": false, "": false} {
		if got := p.Allows(host, false); got != want {
			t.Errorf("Allows(%q) = %v, want %v", host, got, want)
		}
	}
}

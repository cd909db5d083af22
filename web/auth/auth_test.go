package auth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/redistest"
)

func TestIdentifyAndAuthorize(t *testing.T) {
	rdb := redistest.Client(t)
	keys := testKeys(t, rdb)
	a := New("admin-token-0123456789", "viewer-token-0123456789", Options{Redis: rdb, Namespace: keys.namespace()})
	ctx := t.Context()
	req := func(method, path, tok string) *http.Request {
		r := httptest.NewRequest(method, path, nil)
		if tok != "" {
			r.Header.Set("Authorization", "Bearer "+tok)
		}
		return r
	}
	if _, err := a.Identify(ctx, req("GET", "/", "wrong"), time.Now()); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("wrong token: %v", err)
	}
	viewer, _ := a.Identify(ctx, req("GET", "/", "viewer-token-0123456789"), time.Now())
	fp, _ := a.Fingerprint(ctx, "viewer-token-0123456789")
	if viewer.Role != RoleViewer || viewer.Fingerprint != fp || !viewer.Bearer {
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
	local, _ := New("", "", Options{}).Identify(ctx, req("POST", "/", ""), time.Now())
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

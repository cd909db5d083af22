package auth

import (
	"bytes"
	"strings"
	"testing"
)

// Any session cookie a browser (or an attacker) sends: reading it never
// panics, and it names a session only when it is exactly the cookie Open
// issues for that id, its signature under the secret in canonical
// encoding, so no cookie but the issued one opens a session.
func FuzzSessionCookie(f *testing.F) {
	s := NewSessions(nil, NewKeys("fuzz"), &Keyring{secret: bytes.Repeat([]byte{7}, secretLen)}, nil)
	issued := func(id string) string { return id + "." + b64.EncodeToString(s.sign(id)) }
	for _, seed := range []string{
		issued("session-id-1"), issued(strings.Repeat("A", 43)), issued("x"),
		"", ".", "a.", ".b", "x.y", issued("a") + ".", issued("a.b"),
		strings.Repeat("a", 300) + "." + b64.EncodeToString(s.sign("a")),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, cookie string) {
		id, ok := s.idOf(cookie)
		if !ok {
			return
		}
		if id == "" || cookie != issued(id) {
			t.Fatalf("cookie %q opens session %q; only %q should", cookie, id, issued(id))
		}
	})
}

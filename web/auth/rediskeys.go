package auth

import "strings"

// Keys names the Redis keys of the console's sign-in state: the signing
// secret, the sessions and the failure counts. They share one hash tag, so
// a Cluster keeps them in one slot (auth_fail_record.lua touches two), and
// the "lw:{" prefix (store/internal/wire.Prefix) keeps them out of discovery.
type Keys struct{ tag string }

// DefaultNamespace is the hash tag of a console's sign-in keys.
const DefaultNamespace = "auth"

// NewKeys returns the key names under namespace ("" is DefaultNamespace).
// Consoles sharing a Redis and a namespace share sessions and limits.
func NewKeys(namespace string) Keys {
	if namespace == "" {
		namespace = DefaultNamespace
	}
	// Braces would end the hash tag early.
	namespace = strings.NewReplacer("{", "_", "}", "_").Replace(namespace)
	return Keys{tag: "lw:{" + namespace + "}:"}
}

// Secret: the signing secret (STRING, hex).
func (k Keys) Secret() string { return k.tag + "secret" }

// Session: one session (HASH role, fp, created, seen) by its stored id.
func (k Keys) Session(id string) string { return k.tag + "session:" + id }

// RoleSessions: the sessions of one role (ZSET session id -> created, Redis
// µs), the newest SessionOptions.MaxPerRole of them.
func (k Keys) RoleSessions(role string) string { return k.tag + "sessions:" + role }

// Failures: one source's failed token checks (HASH n, until).
func (k Keys) Failures(source string) string { return k.tag + "fail:" + source }

// AllFailures: every source's failed token checks together (HASH n).
func (k Keys) AllFailures() string { return k.tag + "fail-all" }

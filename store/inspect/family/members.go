package family

import (
	"strings"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/inspect/internal/glob"
	"github.com/lockwarden/lockwarden/store/internal/wire"
)

// A family's member keys: a counter family's are the keys its pattern
// matches, a per-client limiter's the value keys of its clients,
// "{name}:value:<client-id>".

// memberPrefix is what is cut off a member key to name the member: a
// per-client limiter's value key prefix ("{name}:value:").
func memberPrefix(f inspect.Family) string {
	switch f.Kind {
	case inspect.FamilyPerClient:
		return wire.RedissonValueKey(f.ID, "") + ":"
	case inspect.FamilyEnvoy:
		return f.ID + "_"
	case inspect.FamilyExpress:
		return strings.TrimSuffix(f.ID, "*")
	}
	return ""
}

// keyMatch is the SCAN MATCH of f's member keys.
func keyMatch(f inspect.Family) string {
	switch f.Kind {
	case inspect.FamilyPerClient, inspect.FamilyEnvoy:
		return glob.Escape(memberPrefix(f)) + "*"
	}
	return f.ID
}

// memberID names a member key as a row shows it: a counter by its key, a
// client by its id.
func memberID(f inspect.Family, key string) string {
	if prefix := memberPrefix(f); prefix != "" && len(key) > len(prefix) && strings.HasPrefix(key, prefix) {
		return key[len(prefix):]
	}
	return key
}

// holds reports whether key, listed by a SCAN of keyMatch, is one of f's
// members as p configures them: a counter belongs to the first pattern it
// matches, so a key of an earlier pattern is another family's.
func holds(f inspect.Family, p inspect.ObjectPatterns, key string) bool {
	switch f.Kind {
	case inspect.FamilyEnvoy, inspect.FamilyExpress:
		return f.Member(key)
	case inspect.FamilyPerClient:
		return true
	}
	for _, r := range p.Counters {
		if inspect.GlobMatch(r.Pattern, key) {
			return r.Pattern == f.ID
		}
	}
	return false
}

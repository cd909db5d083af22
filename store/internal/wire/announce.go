package wire

import "strings"

// String kinds carry no marker in Redis (a token lock and a counter are
// plain strings), so store announces them with their kind: the member of
// ClientNamesKey is "\x00<kind>\x00<name>". The console then reads them as
// that kind at once, without any configured pattern. Hash kinds are
// announced by their bare name (their layout says what they are).
const (
	AnnounceTokenLock = "token-lock"
	AnnounceCounter   = "counter"
)

// AnnouncedMember is the ClientNamesKey member announcing name as kind (""
// for a hash kind: the bare name).
func AnnouncedMember(kind, name string) string {
	if kind == "" {
		return name
	}
	return "\x00" + kind + "\x00" + name
}

// ParseAnnounced splits a ClientNamesKey member into the object's name and
// its announced kind ("" for a bare name).
func ParseAnnounced(member string) (name, kind string) {
	if rest, ok := strings.CutPrefix(member, "\x00"); ok {
		if k, n, ok := strings.Cut(rest, "\x00"); ok && (k == AnnounceTokenLock || k == AnnounceCounter) {
			return n, k
		}
	}
	return member, ""
}

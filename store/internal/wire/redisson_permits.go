package wire

import (
	"encoding/binary"
	"fmt"
)

// Layouts of a Redisson sliding-window grant, the members of
// "{<name>}:permits[:<client-id>]", as struct.pack formats.
const (
	RedissonPermitFI   = "fI"   // 3.13.3 to 3.16.3: float32 random, uint32 permits (8 bytes)
	RedissonPermitLc0I = "Lc0I" // 3.16.4: uint64 id length, id, uint32 permits
	RedissonPermitBc0I = "Bc0I" // 3.17.0 and later: uint8 id length, id, uint32 permits
)

// DecodeRedissonPermit reads the permits a grant member holds, whichever
// Redisson version wrote it, and the layout it matches. Every layout ends in
// the permits as a uint32 in the server's byte order (little-endian on every
// platform Redis runs on), so the count never depends on guessing the
// layout right; the layout is reported for display. A member that fits
// both "Bc0I" and "fI" (8 bytes whose first byte is 3) is reported as
// "Bc0I". A member that fits no layout is an error.
func DecodeRedissonPermit(member []byte) (permits uint32, layout string, err error) {
	n := len(member)
	if n < 5 {
		return 0, "", fmt.Errorf("redisson grant of %d bytes: too short for any layout", n)
	}
	permits = binary.LittleEndian.Uint32(member[n-4:])
	switch {
	case int(member[0])+5 == n:
		return permits, RedissonPermitBc0I, nil
	case n >= 12 && binary.LittleEndian.Uint64(member[:8]) == uint64(n-12):
		return permits, RedissonPermitLc0I, nil
	case n == 8:
		return permits, RedissonPermitFI, nil
	}
	return 0, "", fmt.Errorf("redisson grant of %d bytes matches no known layout (fI, Lc0I, Bc0I)", n)
}

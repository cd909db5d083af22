package wire

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
)

// Any bytes a sorted set may hold as a grant: decoding never panics, the
// permits are the last four bytes whenever a layout matched, and the
// layout named is one the member's length and prefix fit.
func FuzzDecodeRedissonPermit(f *testing.F) {
	for _, seed := range [][]byte{
		nil, {1, 2, 3, 4}, {0, 5, 0, 0, 0},
		permitFI(0.5, 3), permitBc0I([]byte("client-1"), 7), permitLc0I([]byte("client-22"), 1<<31),
		{3, 'a', 'b', 'c', 9, 0, 0, 0}, // fits Bc0I and fI
		bytes.Repeat([]byte{0xff}, 300),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, member []byte) {
		permits, layout, err := DecodeRedissonPermit(member)
		if err != nil {
			if permits != 0 || layout != "" {
				t.Fatalf("error %v with permits %d, layout %q", err, permits, layout)
			}
			return
		}
		n := len(member)
		if want := binary.LittleEndian.Uint32(member[n-4:]); permits != want {
			t.Fatalf("permits %d, the last four bytes say %d", permits, want)
		}
		switch layout {
		case RedissonPermitBc0I:
			if int(member[0])+5 != n {
				t.Fatalf("Bc0I for %d bytes with id length %d", n, member[0])
			}
		case RedissonPermitLc0I:
			if n < 12 || binary.LittleEndian.Uint64(member[:8]) != uint64(n-12) {
				t.Fatalf("Lc0I for %d bytes", n)
			}
		case RedissonPermitFI:
			if n != 8 {
				t.Fatalf("fI for %d bytes", n)
			}
		default:
			t.Fatalf("layout %q", layout)
		}
	})
}

// Grants written in each layout decode to what was written.
func FuzzRedissonPermitLayouts(f *testing.F) {
	f.Add([]byte("a-client-id"), uint32(1), float32(0.25))
	f.Add([]byte{}, uint32(0), float32(0))
	f.Add(bytes.Repeat([]byte("x"), 255), uint32(1<<32-1), float32(-1))
	f.Fuzz(func(t *testing.T, id []byte, permits uint32, random float32) {
		if len(id) <= 255 {
			if got, layout, err := DecodeRedissonPermit(permitBc0I(id, permits)); err != nil || got != permits || layout != RedissonPermitBc0I {
				t.Fatalf("Bc0I of id %q, %d permits: %d %q %v", id, permits, got, layout, err)
			}
		}
		m := permitLc0I(id, permits)
		if got, layout, err := DecodeRedissonPermit(m); err != nil || got != permits || (layout != RedissonPermitLc0I && int(m[0])+5 != len(m)) {
			t.Fatalf("Lc0I of id %q, %d permits: %d %q %v", id, permits, got, layout, err)
		}
		m = permitFI(random, permits)
		if got, layout, err := DecodeRedissonPermit(m); err != nil || got != permits || (layout != RedissonPermitFI && m[0] != 3) {
			t.Fatalf("fI of %v, %d permits: %d %q %v", random, permits, got, layout, err)
		}
	})
}

// The three layouts, as struct.pack writes them little-endian.
func permitFI(random float32, permits uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, math.Float32bits(random))
	return binary.LittleEndian.AppendUint32(b, permits)
}

func permitBc0I(id []byte, permits uint32) []byte {
	b := append([]byte{byte(len(id))}, id...)
	return binary.LittleEndian.AppendUint32(b, permits)
}

func permitLc0I(id []byte, permits uint32) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(id)))
	b = append(b, id...)
	return binary.LittleEndian.AppendUint32(b, permits)
}

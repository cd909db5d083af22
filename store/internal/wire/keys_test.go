package wire

import "testing"

// Known slots, as redis-server 7.0's CLUSTER KEYSLOT reports them (the
// hash-tag cases are the Redis Cluster specification's examples).
func TestSlotKnownValues(t *testing.T) {
	cases := map[string]uint16{
		"123456789":            12739, // CRC16/XMODEM check value 0x31C3
		"foo":                  12182,
		"user1000":             3443,
		"{user1000}.following": 3443, // only the tag is hashed
		"foo{}{bar}":           8363, // an empty tag: the whole key is hashed
		"foo{{bar}}zap":        4015, // the tag is "{bar"
		"foo{bar}{zap}":        5061, // only the first tag counts
	}
	for key, want := range cases {
		if got := Slot(key); got != want {
			t.Errorf("Slot(%q) = %d, want %d", key, got, want)
		}
	}
	if crc16("123456789") != 0x31C3 {
		t.Fatalf("crc16 check value = %#x, want 0x31c3", crc16("123456789"))
	}
	if hashed("foo{}{bar}") != "foo{}{bar}" {
		t.Errorf("empty tag must hash the whole key, got %q", hashed("foo{}{bar}"))
	}
	if hashed("foo{{bar}}zap") != "{bar" {
		t.Errorf("hashed(foo{{bar}}zap) = %q, want {bar", hashed("foo{{bar}}zap"))
	}
}

func TestHashTagForOddNames(t *testing.T) {
	for _, name := range []string{"plain", "a{}b", "x}y", "{a}b", "a{b", "{}", "}", "{", "ключ {}", ""} {
		tag := HashTagFor(name)
		if Slot("{"+tag+"}") != Slot(name) {
			t.Errorf("HashTagFor(%q) = %q: slot %d, want %d", name, tag, Slot("{"+tag+"}"), Slot(name))
		}
		if Slot(StatsKey(name)) != Slot(name) {
			t.Errorf("StatsKey(%q) = %q in slot %d, want %d", name, StatsKey(name), Slot(StatsKey(name)), Slot(name))
		}
	}
}

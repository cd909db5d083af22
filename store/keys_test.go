package store

import "testing"

// Known slots from the Redis Cluster specification and CLUSTER KEYSLOT.
func TestSlotKnownValues(t *testing.T) {
	cases := map[string]uint16{
		"123456789":            0x31C3 % numSlots, // CRC16/XMODEM check value
		"foo":                  12182,
		"{user1000}.following": Slot("user1000"),
		"foo{}{bar}":           Slot("foo{}{bar}"),
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
		tag := hashTagFor(name)
		if Slot("{"+tag+"}") != Slot(name) {
			t.Errorf("hashTagFor(%q) = %q: slot %d, want %d", name, tag, Slot("{"+tag+"}"), Slot(name))
		}
		if Slot(StatsKey(name)) != Slot(name) {
			t.Errorf("StatsKey(%q) = %q in slot %d, want %d", name, StatsKey(name), Slot(StatsKey(name)), Slot(name))
		}
	}
}

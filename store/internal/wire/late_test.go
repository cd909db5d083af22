package wire

import "testing"

func TestLateMessagesAndChannels(t *testing.T) {
	got, ok := ParseLateMessage("9 a:b c d e release 1700000000123 1700000000001 x:y z")
	want := Late{Holder: "a:b c d e", Op: "release", AtMS: 1700000000123, NextSinceMS: 1700000000001, Next: "x:y z"}
	if !ok || got != want {
		t.Fatalf("ParseLateMessage = %+v %v, want %+v", got, ok, want)
	}
	if got, ok := ParseLateMessage("3 abc renew 5 0 "); !ok || got.Next != "" || got.Op != "renew" {
		t.Fatalf("a free lock's record = %+v %v", got, ok)
	}
	for _, bad := range []string{"", "3 abc", "9 abc release 1 0 x", "0  release 1 0 x", "3 abc grab 1 0 x", "3 abc release -1 0 x", "x abc release 1 0 x"} {
		if _, ok := ParseLateMessage(bad); ok {
			t.Errorf("ParseLateMessage(%q) accepted", bad)
		}
	}
	for _, name := range []string{"orders", "a{b}c", "x}y", "with:late:inside"} {
		if n, ok := LateOwner(LateChannel(name)); !ok || n != name {
			t.Errorf("LateOwner(LateChannel(%q)) = %q %v", name, n, ok)
		}
		if Slot(LateChannel(name)) != Slot(name) {
			t.Errorf("LateChannel(%q) is in another slot", name)
		}
	}
	if _, ok := LateOwner(StatsKey("x")); ok {
		t.Error("a stats key read as a late channel")
	}
}

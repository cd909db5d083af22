package inspect

import (
	"testing"

	"github.com/lockwarden/lockwarden/store/internal/wire"
)

// A console key is laid out as lockwarden's own keys of an object are
// (wire's stats key is one), so it shares the object's slot whatever the
// name holds.
func TestConsoleKeyInTheObjectsSlot(t *testing.T) {
	for _, name := range []string{"orders:42", "a{b}c", "x}y{", "{}", "{a}{b}", "ünïcode lock", ""} {
		if got, want := ConsoleKey("stats", name), wire.StatsKey(name); got != want {
			t.Errorf("ConsoleKey(stats, %q) = %q, want wire's %q", name, got, want)
		}
		if !wire.IsInternalKey(ConsoleKey("h10s", name)) {
			t.Errorf("ConsoleKey(h10s, %q) would be listed as an object", name)
		}
	}
}

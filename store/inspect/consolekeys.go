package inspect

import "github.com/lockwarden/lockwarden/store/internal/wire"

// ConsoleKey names a key the console keeps about the object at name (the
// history's rings and holds, web/history's keys.go):
// "lw:{<tag>}:<kind>:<name>", in the object's hash slot, so that one script
// can touch an object's keys together on a Cluster, and never listed as an
// object (IsInternalKey's prefix).
func ConsoleKey(kind, name string) string {
	return wire.Prefix + wire.HashTagFor(name) + "}:" + kind + ":" + name
}

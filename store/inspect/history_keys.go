package inspect

import "github.com/lockwarden/lockwarden/store/internal/wire"

// The history's keys (layout documented in store/internal/wire's
// history_keys.go), for the console's history package.
const (
	HistoryWriterLock = wire.HistoryWriterLock
	HistoryMetaKey    = wire.HistoryMetaKey
	HistoryIndexKey   = wire.HistoryIndexKey
)

// HistoryFineKey and the functions below name one object's history keys.
func HistoryFineKey(name string) string   { return wire.HistoryFineKey(name) }
func HistoryCoarseKey(name string) string { return wire.HistoryCoarseKey(name) }
func HistoryHoldsKey(name string) string  { return wire.HistoryHoldsKey(name) }
func HistoryOpenKey(name string) string   { return wire.HistoryOpenKey(name) }
func HistoryWaitKey(name string) string   { return wire.HistoryWaitKey(name) }

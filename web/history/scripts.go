package history

import (
	"github.com/lockwarden/lockwarden/luascripts"
	"github.com/lockwarden/lockwarden/store"
)

// The hold scripts live beside every other script in luascripts/, each
// with its KEYS / ARGV / returns header, and go out once (store.Script).
var (
	holdWrite = store.NewScript(luascripts.Source("history_hold_write"))
	holdMark  = store.NewScript(luascripts.Source("history_hold_mark"))
	holdAmend = store.NewScript(luascripts.Source("history_hold_amend"))
)

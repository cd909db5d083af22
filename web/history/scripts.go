package history

import (
	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/luascripts"
)

// The hold scripts live beside every other script in luascripts/, each
// with its KEYS / ARGV / returns header.
var (
	holdWriteSrc = luascripts.Source("history_hold_write")
	holdWrite    = redis.NewScript(holdWriteSrc)
	holdMark     = redis.NewScript(luascripts.Source("history_hold_mark"))
)

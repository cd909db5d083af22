package history

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed hold_write.lua
	holdWriteSrc string
	//go:embed hold_mark.lua
	holdMarkSrc string

	holdWrite = redis.NewScript(holdWriteSrc)
	holdMark  = redis.NewScript(holdMarkSrc)
)

package web

import (
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/views"
	"github.com/lockwarden/lockwarden/web/live"
)

// wallSorts are the orders of the wall's locks (?sort=): by name, or the
// most contended first (static/waits.js re-orders them the same way as
// frames arrive).
var wallSorts = []string{sortName, sortContention}

// wallLockSort reads the wall's ?sort=; a bad value is a 400 naming it.
func wallLockSort(c echo.Context) (string, error) {
	switch s := c.QueryParam("sort"); s {
	case "":
		return sortName, nil
	case sortName, sortContention:
		return s, nil
	default:
		return "", inspect.Invalid("sort", "sort must be one of "+strings.Join(wallSorts, ", "))
	}
}

// wallLocks are the first views.WallLocks locks of sn in the order sort
// asks for. By contention the key is the inverse of contentionKey, so the
// order's ascending pass puts the most contended first and breaks ties by
// name, as the script does.
func wallLocks(sn *live.Snapshot, sort string) []views.LockRow {
	key := func(l *inspect.LockInfo) sortKey { return sortKey{Name: l.Name} }
	if sort == sortContention {
		key = func(l *inspect.LockInfo) sortKey { return sortKey{Num: -contentionKey(sn, l.Name), Name: l.Name} }
	}
	ks := order(sn, "wall-locks", sn.Locks, listQuery{Sort: sort}, lockName, lockKind, key)
	out := make([]views.LockRow, 0, min(len(ks), views.WallLocks))
	for _, k := range ks[:min(len(ks), views.WallLocks)] {
		l := sn.Locks[k.i]
		out = append(out, views.LockRow{Name: l.Name, Kind: string(l.Kind), WaitersTotal: l.WaitersTotal,
			Wait: waitRow(waitOf(sn, l.Name).TenSeconds)})
	}
	return out
}

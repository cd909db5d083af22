package web

import (
	"context"

	"github.com/labstack/echo/v4"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/admin"
	"github.com/lockwarden/lockwarden/web/history"
)

// The history part (web/history) as the console runs it: opened with the
// server, handed every snapshot as one of live's observers, closed first
// so that its writer lock goes to another replica at once.

// historyOff says Config turns the history off (a negative HistoryTop).
func (c *Config) historyOff() bool { return c != nil && c.HistoryTop < 0 }

func (c *Config) historyOptions() *history.Options {
	return &history.Options{FineRetention: c.HistoryFine, CoarseRetention: c.HistoryCoarse, Top: c.HistoryTop}
}

// openHistory starts the history on the console's Redis, unless Config
// turns it off. It outlives ctx's cancellation: the Recorder's Run closes
// it when the console stops, handing the writer lock back.
func (s *Server) openHistory(ctx context.Context) error {
	if s.cfg.historyOff() {
		return nil
	}
	return s.hist.Open(ctx, s.insp.Redis(), s.cfg.historyOptions())
}

// forceUnlock runs admin's force-unlock for this request. A lost race
// carries the lock's holders now.
func (s *Server) forceUnlock(c echo.Context, req admin.ForceUnlock) (admin.Unlocked, error) {
	res, err := s.admin.ForceUnlock(c.Request().Context(), s.actor(c), req)
	recorded(c)
	if inspect.CodeOf(err) == inspect.CodeConflict && res.Holders != nil {
		err = withHolders(err, res.Holders)
	}
	return res, err
}

// snapshotAt is the latest snapshot's Redis time (ms), 0 before the first.
func (s *Server) snapshotAt() int64 {
	if sn := s.live.Latest(); sn != nil {
		return sn.At
	}
	return 0
}

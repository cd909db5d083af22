package web

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/inspect/whatif"
	"github.com/lockwarden/lockwarden/web/admin"
	"github.com/lockwarden/lockwarden/web/history"
)

// The history API and its presenters, which the pages share: a limiter's
// steps with the audited changes of its span, a lock's holds, and the
// what-if replay of a limiter's last hour at other settings.

// limiterHistoryJSON is GET /api/limiters/{name}/history.
type limiterHistoryJSON struct {
	history.LimiterHistory
	// Changes are the audited changes of the limiter in the span, oldest
	// first: rate edits, resets.
	Changes []inspect.AuditRecord `json:"changes"`
	through int64
}

// historyThroughHeader carries the flush time (Redis Unix ms) a history
// answer ends at: two replicas' answers at the same flush time are the
// same bytes.
const historyThroughHeader = "History-Through"

func setHistoryThrough(c echo.Context, through int64) {
	c.Response().Header().Set(historyThroughHeader, strconv.FormatInt(through, 10))
}

// errNoHistory answers when the console keeps none (--history-top 0).
var errNoHistory = notFound("this console keeps no history (--history-top 0)")

// history is the running history, or errNoHistory.
func (s *Server) history() (*history.History, error) {
	if h := s.hist.Load(); h != nil {
		return h, nil
	}
	return nil, errNoHistory
}

// historySpanParam is ?span=, "1h" when absent; history checks the value.
func historySpanParam(c echo.Context) string {
	if v := c.QueryParam("span"); v != "" {
		return v
	}
	return history.SpanHour
}

// limiterHistory is name's steps over span and the changes audited in
// it, at the newest flush (histCache: no Redis read between two flushes).
func (s *Server) limiterHistory(ctx context.Context, name, span string) (limiterHistoryJSON, error) {
	lh, through, err := s.cachedLimiter(ctx, name, span)
	if err != nil {
		return limiterHistoryJSON{}, err
	}
	out := limiterHistoryJSON{LimiterHistory: lh, Changes: []inspect.AuditRecord{}, through: through}
	if len(lh.Points) == 0 {
		return out, nil
	}
	// No upper bound: a change made after the newest flushed step (since
	// the last flush) is in the span all the same, and the chart draws it
	// at its right edge, now.
	from := time.Unix(lh.Points[0].T, 0)
	recs, err := s.cachedAudit(ctx, through)
	if err != nil {
		return out, err
	}
	for _, r := range slices.Backward(recs) {
		if r.Target == name && r.Outcome == inspect.OutcomeOK && isLimiterChange(r.Action) && !r.Time.Before(from) {
			out.Changes = append(out.Changes, r)
		}
	}
	return out, nil
}

// isLimiterChange: the audited actions that change a limiter's behaviour.
func isLimiterChange(action string) bool {
	return action == admin.ActionModify || action == admin.ActionReset
}

func (s *Server) handleAPILimiterHistory(c echo.Context) error {
	name, err := nameParam(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	out, err := s.limiterHistory(ctx, name, historySpanParam(c))
	if err != nil {
		return err
	}
	if !out.Kept {
		// Without a history, a name Redis does not know is no limiter.
		if _, err := s.insp.GetLimiter(ctx, name); err != nil {
			return objectError(err, "limiter", name)
		}
	}
	setHistoryThrough(c, out.through)
	return c.JSON(http.StatusOK, out)
}

func (s *Server) handleAPILockHistory(c echo.Context) error {
	name, err := nameParam(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	out, through, err := s.cachedLock(ctx, name, historySpanParam(c))
	if err != nil {
		return err
	}
	if !out.Kept {
		// A lock nobody holds has no key: without a history it is unknown.
		if _, err := s.insp.GetLock(ctx, name); err != nil {
			return objectError(err, "lock", name)
		}
	}
	setHistoryThrough(c, through)
	return c.JSON(http.StatusOK, out)
}

// whatIf replays l's last hour of recorded demand at the proposed rate and
// interval (admin.CheckEdit's, checked again by the limiter's kind): the
// hour's 10 s steps (the chart's, read once per flush), the last minutes
// in the 200 ms buckets the live ring still holds. s.whatIfs fits the
// demand once per flush and replays each proposal once, a few at a time.
func (s *Server) whatIf(ctx context.Context, l *inspect.LimiterInfo, edit admin.LimiterEdit) (*whatif.Result, error) {
	lh, through, err := s.cachedLimiter(ctx, l.Name, history.SpanHour)
	if err != nil {
		return nil, err
	}
	key := whatif.Key{Name: l.Name, Through: through, Limiter: whatif.FromInfo(l)}
	if through <= 0 {
		// Nothing flushed yet: the buckets are all the demand, and the
		// answer holds until the next of them.
		first, counts := s.live.History().Buckets(l.Name)
		key.Through = -(first + int64(len(counts)))
	}
	return s.whatIfs.Replay(ctx, key, whatif.Settings{Rate: edit.Rate, IntervalMS: edit.IntervalMS},
		func(context.Context) (demand, fine whatif.Series, err error) {
			// A history step counts the buckets complete at its last
			// tick, one behind (web/history.go's limiterSamples); the
			// newest step ends at the flush.
			demand = whatif.Series{StepMS: lh.StepS * 1000, Points: make([]whatif.Point, 0, len(lh.Points)),
				LagMS: inspect.BucketMS, EdgeMS: inspect.BucketMS}
			if through > 0 {
				demand.EndMS = through
			}
			for _, p := range lh.Points {
				if p.Acquired+p.Rejected+p.Errors == 0 {
					continue
				}
				demand.Points = append(demand.Points, whatif.Point{T: time.Unix(p.T, 0).UTC(),
					Counts: inspect.Counts{Acquired: p.Acquired, Rejected: p.Rejected, Errors: p.Errors}})
			}
			return demand, whatif.BucketSeries(s.live.History().Buckets(l.Name)), nil
		})
}

// handleAPIWhatIf is POST /api/limiters/{name}/what-if: it changes
// nothing, so a viewer may send it (routes registers it as a query).
func (s *Server) handleAPIWhatIf(c echo.Context) error {
	name, err := nameParam(c)
	if err != nil {
		return err
	}
	var body rateBody
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	edit, err := body.check()
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	l, err := s.insp.GetLimiter(ctx, name)
	if err != nil {
		return objectError(err, "limiter", name)
	}
	res, err := s.whatIf(ctx, l, edit)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}

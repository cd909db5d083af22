package consoleclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// ListQuery narrows a list as the pages' filters do.
type ListQuery struct {
	Match string // ?match=, a glob on names
	Sort  string // ?sort=, one of the list's columns (the console says which)
	Desc  bool   // ?order=desc
	// Q is ?q=, a search, any case, over names and who holds or waits for
	// a lock: holder or owner id (so a client id), application, host.
	Q string
}

func (q ListQuery) values() url.Values {
	v := url.Values{}
	if q.Match != "" {
		v.Set("match", q.Match)
	}
	if q.Sort != "" {
		v.Set("sort", q.Sort)
	}
	if q.Desc {
		v.Set("order", "desc")
	}
	if q.Q != "" {
		v.Set("q", q.Q)
	}
	return v
}

// List is every row a list query selects, in the console's order: Items
// decoded, Raw as the console sent them. All counts the list before its
// filters (the answer's "all"), so an empty answer can say among how many.
type List[T any] struct {
	Items []T
	Raw   []json.RawMessage
	All   int
}

// Paging through a list: the largest page the console gives, and a bound
// on pages so a console that keeps handing out cursors cannot loop us.
const (
	pageSize = 500
	maxPages = 1000
)

// listAll follows a list's cursors to its last page. key is the field
// holding the rows ("locks", "limiters").
func listAll[T any](ctx context.Context, c *Client, path, key string, q url.Values) (List[T], error) {
	var out List[T]
	q.Set("limit", strconv.Itoa(pageSize))
	for range maxPages {
		var page map[string]json.RawMessage
		if _, err := c.get(ctx, path, q, &page); err != nil {
			return out, err
		}
		var rows []json.RawMessage
		if err := json.Unmarshal(page[key], &rows); err != nil {
			return out, fmt.Errorf("GET %s: no %q list in the answer", path, key)
		}
		for _, r := range rows {
			var it T
			if err := json.Unmarshal(r, &it); err != nil {
				return out, fmt.Errorf("GET %s: a row is not what was expected: %v", path, err)
			}
			out.Items, out.Raw = append(out.Items, it), append(out.Raw, r)
		}
		_ = json.Unmarshal(page["all"], &out.All)
		var next string
		_ = json.Unmarshal(page["next_cursor"], &next)
		if next == "" {
			return out, nil
		}
		q.Set("cursor", next)
	}
	return out, fmt.Errorf("GET %s: more than %d pages", path, maxPages)
}

// Locks is GET /api/locks, every page.
func (c *Client) Locks(ctx context.Context, q ListQuery) (List[Lock], error) {
	return listAll[Lock](ctx, c, "/api/locks", "locks", q.values())
}

// Limiters is GET /api/limiters, every page.
func (c *Client) Limiters(ctx context.Context, q ListQuery) (List[Limiter], error) {
	return listAll[Limiter](ctx, c, "/api/limiters", "limiters", q.values())
}

// Lock is GET /api/locks/{name}.
func (c *Client) Lock(ctx context.Context, name string) (*Lock, []byte, error) {
	var l Lock
	raw, err := c.get(ctx, objectPath("/api/locks/", name, ""), nil, &l)
	if err != nil {
		return nil, raw, err
	}
	return &l, raw, nil
}

// Limiter is GET /api/limiters/{name}.
func (c *Client) Limiter(ctx context.Context, name string) (*Limiter, []byte, error) {
	var l Limiter
	raw, err := c.get(ctx, objectPath("/api/limiters/", name, ""), nil, &l)
	if err != nil {
		return nil, raw, err
	}
	return &l, raw, nil
}

// Deadlocks is GET /api/deadlocks.
func (c *Client) Deadlocks(ctx context.Context) ([]Deadlock, []byte, error) {
	var out struct {
		Deadlocks []Deadlock `json:"deadlocks"`
	}
	raw, err := c.get(ctx, "/api/deadlocks", nil, &out)
	return out.Deadlocks, raw, err
}

// Alerts is GET /api/alerts: the firing alerts.
func (c *Client) Alerts(ctx context.Context) ([]Alert, []byte, error) {
	var out struct {
		Alerts []Alert `json:"alerts"`
	}
	raw, err := c.get(ctx, "/api/alerts", nil, &out)
	return out.Alerts, raw, err
}

// Why is GET /api/why/{name}: the console's paragraph on a lock or a
// limiter (or a name it listed within the hour), its facts and the ways
// out.
func (c *Client) Why(ctx context.Context, name string) (*Why, []byte, error) {
	var w Why
	raw, err := c.get(ctx, objectPath("/api/why/", name, ""), nil, &w)
	if err != nil {
		return nil, raw, err
	}
	return &w, raw, nil
}

// ForceUnlock is POST /api/locks/{name}/force-unlock: the console breaks
// the hold only if holder still holds the lock, and audits reason.
func (c *Client) ForceUnlock(ctx context.Context, name, holder, reason string) ([]byte, error) {
	body := map[string]string{"holder": holder, "reason": reason}
	return c.send(ctx, http.MethodPost, objectPath("/api/locks/", name, "/force-unlock"), body, nil)
}

// ReleaseAll is POST /api/clients/{id}/release-all: every hold of the
// client, each holder-checked and audited.
func (c *Client) ReleaseAll(ctx context.Context, clientID, reason string) ([]Released, []byte, error) {
	var out struct {
		Released []Released `json:"released"`
	}
	raw, err := c.send(ctx, http.MethodPost, "/api/clients/"+url.PathEscape(clientID)+"/release-all",
		map[string]string{"reason": reason}, &out)
	return out.Released, raw, err
}

// Rate is a limiter's proposed rate per interval.
type Rate struct {
	Rate       float64 `json:"rate"`
	IntervalMS float64 `json:"interval_ms"`
}

// WhatIf is POST /api/limiters/{name}/what-if: it changes nothing.
func (c *Client) WhatIf(ctx context.Context, name string, r Rate) (*WhatIf, []byte, error) {
	var w WhatIf
	raw, err := c.send(ctx, http.MethodPost, objectPath("/api/limiters/", name, "/what-if"), r, &w)
	if err != nil {
		return nil, raw, err
	}
	return &w, raw, nil
}

// LimiterEdit is a change of a limiter's rate.
type LimiterEdit struct {
	Rate
	// KeepState keeps a Redisson limiter's grants (its setRate restarts
	// them).
	KeepState bool
	Reason    string
}

// ModifyLimiter is PUT /api/limiters/{name}, with the reason the
// console requires and keeps in its audit trail.
func (c *Client) ModifyLimiter(ctx context.Context, name string, e LimiterEdit) (*Limiter, []byte, error) {
	body := map[string]any{"rate": e.Rate.Rate, "interval_ms": e.IntervalMS, "reason": e.Reason}
	if e.KeepState {
		body["keep_state"] = true
	}
	var out Limiter
	raw, err := c.send(ctx, http.MethodPut, objectPath("/api/limiters/", name, ""), body, &out)
	if err != nil {
		return nil, raw, err
	}
	return &out, raw, nil
}

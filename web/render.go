package web

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/views"
	"github.com/lockwarden/lockwarden/web/auth"
	"github.com/lockwarden/lockwarden/web/listing"
)

// Writing pages: the layout every page shares, the flash banner after a
// change, a list's paging and sorting links, and the error page.

// render writes a page. It renders into memory first, so a failing
// component ends in a clean error page rather than half a document.
func (s *Server) render(c echo.Context, status int, comp templ.Component) error {
	var buf bytes.Buffer
	if err := comp.Render(c.Request().Context(), &buf); err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.HTMLBlob(status, buf.Bytes())
}

// layout fills what every page shares.
func (s *Server) layout(c echo.Context, title, active string) views.Layout {
	l := views.Layout{Title: title, Active: active, Now: time.Now()}
	id := identityOf(c)
	l.Role = id.Role.String()
	l.ReadOnly = id.Role != auth.RoleAdmin
	l.CanSignOut = id.Role != auth.RoleNone && !id.Bearer && !s.auth.LocalMode()
	if sn := s.live.Latest(); sn != nil {
		l.RedisDown = !sn.RedisUp
		l.Deadlocks = len(sn.Deadlocks)
	}
	l.NodesDown = s.live.NodesDown()
	l.Flash, l.FlashKind = flashFor(c.QueryParam("flash"), s.flashName(c))
	return l
}

// flashFor turns a flash code from a redirect into its message. Codes, not
// text, travel in the link; the object's name is shown only when the
// console signed it into the link itself (flashName), so a link made
// elsewhere cannot put words into a success banner.
func flashFor(code, name string) (string, string) {
	the := func(what string) string {
		if name == "" {
			return "The " + what
		}
		return strings.ToUpper(what[:1]) + what[1:] + " " + strconv.Quote(name)
	}
	switch code {
	case "unlocked":
		return the("lock") + " was force-unlocked.", views.FlashOK
	case "holder-removed":
		if name == "" {
			return "The holder was removed from the lock; the other holders keep it.", views.FlashOK
		}
		return "The holder was removed from lock " + strconv.Quote(name) + "; the other holders keep it.", views.FlashOK
	case "reset":
		return the("counter") + " was reset.", views.FlashOK
	case "saved":
		return the("limiter") + " was updated.", views.FlashOK
	case "released-all":
		// name is "<client>: <released> of <tried>".
		if name == "" {
			return "The client's holds were released; the audit trail has each one and what became of it.", views.FlashOK
		}
		return "Released the holds of " + name + "; the audit trail has each one and what became of it.", views.FlashOK
	}
	return "", ""
}

// flashQuery is the query of a redirect after a change: the banner's code
// and the object's name, signed so that the page shows the name only when
// the console wrote it (flashName).
func (s *Server) flashQuery(c echo.Context, code, name string) url.Values {
	q := url.Values{"flash": {code}}
	if sig, err := s.auth.Sign(c.Request().Context(), "flash", code+"\x00"+name); err == nil {
		q.Set("name", name)
		q.Set("sig", sig)
	}
	return q
}

// flashName is the name flashQuery signed into this request's link; ""
// for any other.
func (s *Server) flashName(c echo.Context) string {
	code, name, sig := c.QueryParam("flash"), c.QueryParam("name"), c.QueryParam("sig")
	if code == "" || name == "" || sig == "" || !s.auth.Verify(c.Request().Context(), "flash", code+"\x00"+name, sig) {
		return ""
	}
	return name
}

func counts(c inspect.Counts) views.Counts {
	return views.Counts{Acquired: c.Acquired, Rejected: c.Rejected, Errors: c.Errors}
}

// staleMark is the row marker of an object shown as last read.
func staleMark(st *inspect.StaleRead) *views.StaleMark {
	if st == nil {
		return nil
	}
	return &views.StaleMark{Node: st.Node, LastRead: st.LastRead, ClusterDown: st.ClusterDown}
}

// listNav is the paging and sorting links of a server-rendered list; they
// keep the filters and work without JavaScript. all is every object of
// the list before the filters, which an empty answer counts.
func listNav(path string, q listing.Query, sorts []string, kinds []inspect.Kind, total, shown, all int, next string) views.ListNav {
	base := func(mod func(url.Values)) string {
		v := url.Values{}
		if q.Q != "" {
			v.Set("q", q.Q)
		}
		if q.Match != "" {
			v.Set("match", q.Match)
		}
		if q.Kind != "" {
			v.Set("kind", string(q.Kind))
		}
		if q.Sort != listing.SortName {
			v.Set("sort", q.Sort)
		}
		if q.Desc {
			v.Set("order", "desc")
		}
		if q.Limit != defaultPageSize {
			v.Set("limit", strconv.Itoa(q.Limit))
		}
		mod(v)
		if len(v) == 0 {
			return path
		}
		return path + "?" + v.Encode()
	}
	n := views.ListNav{List: strings.TrimPrefix(path, "/"), Total: total, Shown: shown, All: all, Q: q.Q, Match: q.Match, Kind: string(q.Kind),
		Sort: q.Sort, Desc: q.Desc, Paged: q.Cursor != ""}
	if next != "" {
		n.NextURL = base(func(v url.Values) { v.Set("cursor", next) })
	}
	if q.Cursor != "" {
		n.FirstURL = base(func(url.Values) {})
	}
	// Live rows may be added only where the page is the whole list in the
	// order the script inserts them (by name).
	// A search looks at holders the script does not match: its rows stay.
	n.Partial = q.Cursor != "" || next != "" || q.Sort != listing.SortName || q.Desc || q.Kind != "" || q.Q != ""
	for _, s := range sorts {
		desc := s == q.Sort && !q.Desc
		n.Sorts = append(n.Sorts, views.SortLink{Name: s, Active: s == q.Sort, Desc: s == q.Sort && q.Desc,
			URL: base(func(v url.Values) {
				v.Del("sort")
				v.Del("order")
				if s != listing.SortName {
					v.Set("sort", s)
				}
				if desc {
					v.Set("order", "desc")
				}
			})})
	}
	for _, k := range kinds {
		n.Kinds = append(n.Kinds, string(k))
	}
	return n
}

// emptyText is what an empty list says: what was searched and how many
// there are, so "nothing matches" never reads as "nothing exists". one
// and many name the object ("lock", "locks"), state what all of them are
// ("held", "known").
func emptyText(q listing.Query, all int, one, many, state string) string {
	var in []string
	if q.Q != "" {
		in = append(in, strconv.Quote(q.Q)+" (in "+listing.SearchedFields+")")
	}
	if q.Match != "" {
		in = append(in, "the name pattern "+strconv.Quote(q.Match))
	}
	if q.Kind != "" {
		in = append(in, "the kind "+string(q.Kind))
	}
	if len(in) == 0 {
		return "No " + many + " " + state + " right now."
	}
	noun := many
	if all == 1 {
		noun = one
	}
	return fmt.Sprintf("No %s matches %s among the %d %s %s.", one, strings.Join(in, " and "), all, noun, state)
}

// historyThroughHeader carries the flush time (Redis Unix ms) a history
// answer ends at: two replicas' answers at the same flush time are the
// same bytes.
const historyThroughHeader = "History-Through"

func setHistoryThrough(c echo.Context, through int64) {
	c.Response().Header().Set(historyThroughHeader, strconv.FormatInt(through, 10))
}

// renderErrorPage is the HTML side of handleError.
func (s *Server) renderErrorPage(c echo.Context, he *httpError) error {
	page := views.ErrorPage{
		Layout:  s.layout(c, http.StatusText(he.Status), ""),
		Status:  he.Status,
		Message: he.Message,
		Back:    backFor(c.Request()),
	}
	for _, h := range he.Holders {
		page.Holders = append(page.Holders, views.HolderRow{ID: h.ID, Count: h.Count})
	}
	return s.render(c, he.Status, views.ErrorView(page))
}

func clipText(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// backFor picks the page an error sends the user back to: the lock for a
// failed force-unlock, else the list the object belongs to.
func backFor(r *http.Request) string {
	p := r.URL.EscapedPath()
	switch {
	case strings.HasPrefix(p, "/locks/") && strings.HasSuffix(p, "/force-unlock"):
		return strings.TrimSuffix(p, "/force-unlock")
	case strings.HasPrefix(p, "/locks/"):
		return "/locks"
	case strings.HasPrefix(p, "/limiters/"):
		return "/limiters"
	}
	return "/"
}

// factRows are a convention's facts in name order.
func factRows(f map[string]string) []views.Fact {
	out := make([]views.Fact, 0, len(f))
	for k, v := range f {
		out = append(out, views.Fact{Name: k, Value: v})
	}
	slices.SortFunc(out, func(a, b views.Fact) int { return strings.Compare(a.Name, b.Name) })
	return out
}

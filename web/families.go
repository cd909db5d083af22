package web

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/views"
	"github.com/lockwarden/lockwarden/web/admin"
)

// Limiter families (store/inspect/families.go): the snapshot's family
// rows as JSON and pages, and the reset of one member counter through the
// audited admin action counters already have.

// familyJSON is a family row; a ?span= leaves the other span out.
type familyJSON struct {
	ID       string              `json:"pattern"`
	Kind     inspect.FamilyKind  `json:"kind"`
	Limit    int64               `json:"limit"`
	WindowMS int64               `json:"window_ms"`
	Keys     int64               `json:"keys"`
	Passes   int64               `json:"passes"`
	Minute   *inspect.FamilySpan `json:"minute,omitempty"`
	Hour     *inspect.FamilySpan `json:"hour,omitempty"`
}

// familySpanParam is ?span= of the family API: "minute", "hour", or "" for both.
func familySpanParam(c echo.Context) (string, error) {
	switch sp := c.QueryParam("span"); sp {
	case "", "minute", "hour":
		return sp, nil
	}
	return "", inspect.Invalid("span", `span must be "minute" or "hour"`)
}

func toFamilyJSON(r inspect.FamilyRow, span string) familyJSON {
	out := familyJSON{ID: r.ID, Kind: r.Kind, Limit: r.Limit, WindowMS: r.WindowMS, Keys: r.Keys, Passes: r.Passes}
	if span != "hour" {
		out.Minute = &r.Minute
	}
	if span != "minute" {
		out.Hour = &r.Hour
	}
	return out
}

// families are the snapshot's families within --match and ?match=.
func (s *Server) families(c echo.Context) ([]inspect.FamilyRow, error) {
	_, g, err := matchParam(c)
	if err != nil {
		return nil, err
	}
	var out []inspect.FamilyRow
	sn := s.live.Latest()
	if sn == nil {
		return out, nil
	}
	for _, r := range sn.Families {
		if s.inScope(r.ID) && (g == nil || g.Match(r.ID)) {
			out = append(out, r)
		}
	}
	return out, nil
}

// family is the family named by the route; 404 when no family has that
// name (scoped answered for names outside --match).
func (s *Server) family(c echo.Context) (*inspect.FamilyRow, error) {
	id, err := nameParam(c)
	if err != nil {
		return nil, err
	}
	f := s.live.Latest().Family(id)
	if f == nil {
		return nil, inspect.Errorf(inspect.CodeNotFound, "no limiter family %q", id)
	}
	return f, nil
}

// limiterClients are the clients of the per-client Redisson limiter name
// as the tick's reads of its family last found them (a request never
// walks the keyspace for them): empty until the family's first reading.
func (s *Server) limiterClients(name string) []inspect.ClientWindow {
	if f := s.live.Latest().Family(name); f != nil && f.Kind == inspect.FamilyPerClient && f.Clients != nil {
		return f.Clients
	}
	return []inspect.ClientWindow{}
}

// handleAPIFamilies is {"families": [...]}.
func (s *Server) handleAPIFamilies(c echo.Context) error {
	span, err := familySpanParam(c)
	if err != nil {
		return err
	}
	rows, err := s.families(c)
	if err != nil {
		return err
	}
	out := make([]familyJSON, 0, len(rows))
	for _, r := range rows {
		out = append(out, toFamilyJSON(r, span))
	}
	return c.JSON(http.StatusOK, map[string]any{"families": out})
}

func (s *Server) handleAPIFamily(c echo.Context) error {
	span, err := familySpanParam(c)
	if err != nil {
		return err
	}
	f, err := s.family(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toFamilyJSON(*f, span))
}

// handleAPIFamilyReset resets one member counter: {"key": "..."}.
func (s *Server) handleAPIFamilyReset(c echo.Context) error {
	var body struct {
		Key string `json:"key"`
	}
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	if err := s.resetMember(c, body.Key); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]bool{"reset": true})
}

func (s *Server) handleFamiliesPage(c echo.Context) error {
	rows, err := s.families(c)
	if err != nil {
		return err
	}
	page := views.FamiliesPage{Layout: s.layout(c, "Limiter families", views.NavLimiters)}
	for _, r := range rows {
		page.Families = append(page.Families, familyView(r))
	}
	return s.render(c, http.StatusOK, views.Families(page))
}

func (s *Server) handleFamilyPage(c echo.Context) error {
	f, err := s.family(c)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, views.Family(views.FamilyPage{
		Layout: s.layout(c, f.ID, views.NavLimiters), Family: familyView(*f)}))
}

// handleFamilyResetForm resets the member counter of the form's key and
// goes back to the family's page.
func (s *Server) handleFamilyResetForm(c echo.Context) error {
	key := c.FormValue(views.FieldKey)
	if err := s.resetMember(c, key); err != nil {
		return err
	}
	id, _ := nameParam(c) // resetMember read it
	q := s.flashQuery(c, "reset", key)
	return c.Redirect(http.StatusSeeOther, views.FamilyURL(id)+"?"+q.Encode())
}

// resetMember resets key, which must be a counter of the route's family;
// otherwise 400 naming "key", and nothing changes.
func (s *Server) resetMember(c echo.Context, key string) error {
	f, err := s.family(c)
	if err != nil {
		return err
	}
	switch {
	case f.Kind == inspect.FamilyPerClient:
		return inspect.Invalid("key", "only a counter family's members can be reset; a per-client limiter's windows are edited with its rate")
	case key == "":
		return inspect.Invalid("key", "key is required")
	case !(inspect.Family{ID: f.ID, Kind: f.Kind}).Member(key):
		return inspect.Invalid("key", fmt.Sprintf("%q is not a member of family %q", key, f.ID))
	}
	err = s.admin.ResetCounter(c.Request().Context(), s.actor(c), admin.ResetCounter{Name: key})
	recorded(c)
	return err
}

func familyView(r inspect.FamilyRow) views.FamilyRow {
	return views.FamilyRow{ID: r.ID, Kind: string(r.Kind), Limit: r.Limit, WindowMS: r.WindowMS, Keys: r.Keys,
		Resettable: r.Kind != inspect.FamilyPerClient,
		Spans:      []views.FamilySpan{spanView("minute", r.Minute), spanView("hour", r.Hour)}}
}

func spanView(name string, sp inspect.FamilySpan) views.FamilySpan {
	return views.FamilySpan{Name: name, Readings: sp.Readings, Admitted: sp.Admitted, Rejected: sp.Rejected,
		MostRejected: offenderViews(sp.MostRejected), MostAdmitted: offenderViews(sp.MostAdmitted),
		NearestLimit: offenderViews(sp.NearestLimit)}
}

func offenderViews(os []inspect.Offender) []views.Offender {
	out := make([]views.Offender, 0, len(os))
	for _, o := range os {
		out = append(out, views.Offender{ID: o.ID, Key: o.Key, Admitted: o.Admitted, Rejected: o.Rejected, Fill: o.Fill})
	}
	return out
}

// familyRoutes adds the family pages, their API and member resets.
func (s *Server) familyRoutes(e *echo.Echo) {
	e.GET("/families", s.handleFamiliesPage)
	e.GET("/families/:name", s.handleFamilyPage)
	s.mutation(e.POST, "/families/:name/reset", admin.ActionReset, s.handleFamilyResetForm)
	e.GET("/api/families", s.handleAPIFamilies)
	e.GET("/api/families/:name", s.handleAPIFamily)
	s.mutation(e.POST, "/api/families/:name/reset", admin.ActionReset, s.handleAPIFamilyReset)
}

package web

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/lockwarden/lockwarden/web/apiref"
)

// The reference lists exactly the routes the console serves: a route
// added without an entry (or an entry left after its route went) fails
// here.
func TestAPIReferenceCoversEveryRoute(t *testing.T) {
	var served []string
	for _, r := range New(Config{}).echo.Routes() {
		served = append(served, r.Method+" "+r.Path)
	}
	slices.Sort(served)
	served = slices.Compact(served)
	listed := apiref.Keys()
	for _, k := range served {
		if !slices.Contains(listed, k) {
			t.Errorf("%s is served but not in web/apiref: add its entry (parameters, body, answer)", k)
		}
	}
	for _, k := range listed {
		if !slices.Contains(served, k) {
			t.Errorf("web/apiref lists %s, which the console does not serve", k)
		}
	}
	for _, r := range apiref.Reference() {
		if r.Summary == "" || (r.Role != apiref.Anyone && r.Role != apiref.Viewer && r.Role != apiref.Admin) {
			t.Errorf("%s: summary %q, role %q", r.Key(), r.Summary, r.Role)
		}
		if strings.Contains(r.Path, ":") && !slices.ContainsFunc(r.Params, func(pr apiref.Param) bool { return pr.In == apiref.InPath }) {
			t.Errorf("%s: its path parameter is not described", r.Key())
		}
	}
}

// GET /api is a page for a browser and JSON for a script;
// /api/openapi.json is an OpenAPI document with every API path.
func TestAPIReferenceServed(t *testing.T) {
	e := newEnv(t, nil)
	st, hdr, b := e.do("GET", "/api", nil, map[string]string{"Accept": "text/html"})
	doc := parseHTML(t, b)
	if st != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") ||
		doc.Find(`[data-testid=api-route][data-method=PUT][data-path="/api/limiters/:name"]`).Length() != 1 {
		t.Fatalf("GET /api as a page: %d %s", st, hdr.Get("Content-Type"))
	}
	var ref struct {
		Routes []apiref.Route
		Errors []string
	}
	e.getJSON("/api?format=json", 200, &ref)
	if len(ref.Routes) != len(apiref.Reference()) || len(ref.Errors) == 0 {
		t.Errorf("GET /api?format=json: %d routes", len(ref.Routes))
	}
	st, _, b = e.do("GET", "/api", nil, map[string]string{"Accept": "application/json"})
	if st != 200 || json.Unmarshal(b, &ref) != nil {
		t.Errorf("GET /api asking for JSON: %d %.100s", st, b)
	}
	var doc3 struct {
		OpenAPI string                    `json:"openapi"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	e.getJSON("/api/openapi.json", 200, &doc3)
	if doc3.OpenAPI != "3.0.3" || doc3.Paths["/api/why/{name}"]["get"] == nil || doc3.Paths["/api/limiters/{name}"]["put"] == nil {
		t.Errorf("openapi.json: %s, paths %d", doc3.OpenAPI, len(doc3.Paths))
	}
}

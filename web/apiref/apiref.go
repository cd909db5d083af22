// Package apiref is the console's API reference: every route it serves,
// with its parameters, body, answer and who may call it, for a person at
// a terminal (GET /api, as HTML or JSON) and for tools (GET
// /api/openapi.json, OpenAPI 3.0). web checks it against its own route
// table in a test, so a route added without an entry fails there. It
// imports nothing of the console.
package apiref

import (
	"regexp"
	"sort"
	"strings"
)

// Who may call a route.
const (
	Anyone = "anyone" // no token: probes, sign-in, static files
	Viewer = "viewer" // the viewer or the admin token (reads, the what-if)
	Admin  = "admin"  // the admin token (changes, each audited)
)

// Where a parameter goes.
const (
	InPath  = "path"
	InQuery = "query"
	InForm  = "form" // an HTML form's field (application/x-www-form-urlencoded)
)

// Param is one parameter of a route.
type Param struct {
	Name     string `json:"name"`
	In       string `json:"in"`
	Required bool   `json:"required,omitempty"`
	Says     string `json:"says"`
}

// Route is one route the console serves.
type Route struct {
	Method string `json:"method"`
	// Path is the route as the console registers it (":name" is a path
	// parameter: one segment, percent-encoded when it holds a "/").
	Path    string  `json:"path"`
	Role    string  `json:"role"`
	Summary string  `json:"summary"`
	Params  []Param `json:"params,omitempty"`
	// Body is an example of the JSON body it takes; Answer an example or
	// the shape of what it answers.
	Body   string `json:"body,omitempty"`
	Answer string `json:"answer,omitempty"`
	// Errors are the statuses beyond the usual ones (401 without a token,
	// 403 for a viewer's change, 503 before the first look at Redis),
	// with when.
	Errors []string `json:"errors,omitempty"`
	// Page: an HTML page or a form's target, for browsers.
	Page bool `json:"page,omitempty"`
}

// Key names a route as the console's route table does: "GET /api/locks".
func (r Route) Key() string { return r.Method + " " + r.Path }

// Reference is every route: the API first, in the order a reader wants it,
// then the pages.
func Reference() []Route {
	out := make([]Route, 0, len(api)+len(pages))
	out = append(out, api...)
	for _, p := range pages {
		p.Page = true
		out = append(out, p)
	}
	return out
}

// Errors every API route can answer; each answer is {"error": "...",
// "field": "..."} (field names the input at fault of a 400).
var Errors = []string{
	"400 a parameter or body is wrong: the message says which and why; nothing changed",
	"401 no token or a wrong one: send 'Authorization: Bearer <token>'",
	"403 a viewer asked for a change, or a browser sent one from another site",
	"404 no such object (or outside --match)",
	"413 a body over 64 KiB",
	"429 too many wrong tokens from this address: wait Retry-After seconds",
	"503 the console has not read Redis yet, or Redis does not answer",
}

var pathParam = regexp.MustCompile(`:([a-z]+)`)

// OpenAPI is the reference as an OpenAPI 3.0 document: one operation per
// route, its parameters, a JSON request body where it takes one, and its
// answer's example as the 200's description.
func OpenAPI(version string) map[string]any {
	paths := map[string]map[string]any{}
	for _, r := range Reference() {
		p := pathParam.ReplaceAllString(r.Path, "{$1}")
		if strings.HasSuffix(p, "*") {
			p = strings.TrimSuffix(p, "*") + "{file}"
		}
		op := map[string]any{"summary": r.Summary, "tags": []string{tag(r)}, "x-role": r.Role,
			"operationId": operationID(r)}
		var params []map[string]any
		var form []string
		for _, pr := range r.Params {
			if pr.In == InForm {
				form = append(form, pr.Name)
				continue
			}
			params = append(params, map[string]any{"name": pr.Name, "in": pr.In, "required": pr.Required || pr.In == InPath,
				"description": pr.Says, "schema": map[string]string{"type": "string"}})
		}
		if strings.HasSuffix(r.Path, "*") {
			params = append(params, map[string]any{"name": "file", "in": "path", "required": true, "schema": map[string]string{"type": "string"}})
		}
		if params != nil {
			op["parameters"] = params
		}
		switch {
		case r.Body != "":
			op["requestBody"] = map[string]any{"content": map[string]any{"application/json": map[string]any{"example": r.Body}}}
		case form != nil:
			props := map[string]any{}
			for _, f := range form {
				props[f] = map[string]string{"type": "string"}
			}
			op["requestBody"] = map[string]any{"content": map[string]any{"application/x-www-form-urlencoded": map[string]any{
				"schema": map[string]any{"type": "object", "properties": props}}}}
		}
		answers := map[string]any{"200": map[string]any{"description": orText(r.Answer, "OK")}}
		for _, e := range r.Errors {
			code, says, _ := strings.Cut(e, " ")
			answers[code] = map[string]any{"description": says}
		}
		op["responses"] = answers
		if paths[p] == nil {
			paths[p] = map[string]any{}
		}
		paths[p][strings.ToLower(r.Method)] = op
	}
	return map[string]any{
		"openapi": "3.0.3",
		"info": map[string]any{"title": "lockwarden console", "version": version,
			"description": "Every route of the console. Errors are {\"error\", \"field\"}: " + strings.Join(Errors, "; ") + "."},
		"components": map[string]any{"securitySchemes": map[string]any{"bearer": map[string]string{"type": "http", "scheme": "bearer"}}},
		"security":   []map[string][]string{{"bearer": {}}},
		"paths":      paths,
	}
}

func tag(r Route) string {
	if r.Page {
		return "pages"
	}
	return "api"
}

// operationID is a route's name for generated clients: "getApiLocksName".
func operationID(r Route) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(r.Method))
	for _, part := range strings.FieldsFunc(r.Path, func(c rune) bool { return c == '/' || c == ':' || c == '-' || c == '*' || c == '.' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

func orText(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// Keys are the routes' keys, sorted.
func Keys() []string {
	var out []string
	for _, r := range Reference() {
		out = append(out, r.Key())
	}
	sort.Strings(out)
	return out
}

package views

// APIRefPage is GET /api: every route of the console, the API first.
type APIRefPage struct {
	Layout
	Routes []APIRoute
	// Errors are the answers every API route may give.
	Errors []string
}

// APIRoute is one route of the reference (web/apiref).
type APIRoute struct {
	Method, Path, Role, Summary string
	Params                      []APIParam
	Body, Answer                string
	Errors                      []string
	Page                        bool
}

// APIParam is one parameter of a route.
type APIParam struct {
	Name, In, Says string
	Required       bool
}

// apiAnchor is a route's id on the page, for links to one route.
func apiAnchor(r APIRoute) string {
	b := []byte(r.Method + r.Path)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '-'
		}
	}
	return "r-" + string(b)
}

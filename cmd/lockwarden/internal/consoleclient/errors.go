package consoleclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// APIError is the console's refusal of one call: its status and the
// message of its JSON error body ({"error", "field", "holders"}, web's
// jsonError), which already says what was wrong.
type APIError struct {
	Method, URL string
	Status      int
	Message     string
	// Field names the input at fault of a 400.
	Field string
	// RetryAfter is the console's Retry-After header of a 429, as sent.
	RetryAfter string
}

func (e *APIError) Error() string {
	switch e.Status {
	case http.StatusUnauthorized:
		return fmt.Sprintf("the console refused the token (401): %s; pass the admin or viewer token with --token or LOCKWARDEN_TOKEN", e.Message)
	case http.StatusForbidden:
		return fmt.Sprintf("refused (403): %s; nothing was changed", e.Message)
	case http.StatusTooManyRequests:
		return fmt.Sprintf("refused (429): %s", e.Message)
	}
	return fmt.Sprintf("%s (%d %s)", e.Message, e.Status, http.StatusText(e.Status))
}

// IsStatus says whether err is the console's refusal with that status.
func IsStatus(err error, status int) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == status
}

func refusal(method, target string, resp *http.Response, body []byte) *APIError {
	e := &APIError{Method: method, URL: target, Status: resp.StatusCode, RetryAfter: resp.Header.Get("Retry-After")}
	var j struct {
		Error string `json:"error"`
		Field string `json:"field"`
	}
	if json.Unmarshal(body, &j) == nil && j.Error != "" {
		e.Message, e.Field = j.Error, j.Field
		return e
	}
	// Not the console's JSON: a proxy's page, or another server.
	line, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
	if len(line) > 200 {
		line = line[:200] + "…"
	}
	if line == "" {
		line = http.StatusText(resp.StatusCode)
	}
	e.Message = fmt.Sprintf("%s %s answered %q", method, target, line)
	return e
}

// UnreachableError says the console did not answer at all: nothing
// listens there, the name does not resolve, or the connection broke.
type UnreachableError struct {
	URL string
	Err error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach the console at %s: %v (is `lockwarden serve` running there? set --console or LOCKWARDEN_CONSOLE)", e.URL, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

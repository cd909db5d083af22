// Package consoleclient talks to a running lockwarden console: its JSON
// API (the routes in web/routes.go) and its websocket /ws, whose frames
// (web/feed) it merges into the live state the wall display keeps. The
// terminal verbs and `lockwarden top` are built on it, so roles, --match,
// the audit trail and the console's one read of Redis apply to them as to
// a browser: nothing here talks to Redis.
package consoleclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultURL is where `lockwarden serve` listens unless told otherwise.
const DefaultURL = "http://127.0.0.1:8080"

// requestTimeout bounds one API call: the console answers from its
// snapshot, so a slow answer means it is not answering.
const requestTimeout = 15 * time.Second

// maxBody bounds what is read of one answer (a 500-row page of locks with
// their waiters is well under it).
const maxBody = 64 << 20

// Client is one console, reached as one role (its token's).
type Client struct {
	base  *url.URL
	token string
	http  *http.Client
}

// New checks rawURL (an http or https URL of the console's root) and
// returns a client that sends token as a Bearer token ("" sends none,
// which a console in local mode on loopback accepts).
func New(rawURL, token string) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(rawURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("console URL %q must be http://host:port or https://host:port", rawURL)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("console URL %q must have no user, query or fragment", rawURL)
	}
	return &Client{base: u, token: token, http: &http.Client{
		Timeout: requestTimeout,
		// The console answers API calls directly; a redirect means a page
		// (the sign-in form), never what a script asked for.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}, nil
}

// URL is the console's root URL.
func (c *Client) URL() string { return c.base.String() }

// objectPath is an API path with one object name as a single escaped
// segment: names may hold "/", "?" or "%".
func objectPath(prefix, name, suffix string) string {
	return prefix + url.PathEscape(name) + suffix
}

// get GETs path?q and decodes the answer into out (when not nil); the
// answer's bytes are returned as the console sent them.
func (c *Client) get(ctx context.Context, path string, q url.Values, out any) ([]byte, error) {
	return c.do(ctx, http.MethodGet, path, q, nil, out)
}

// send sends body as JSON with method and decodes the answer into out.
func (c *Client) send(ctx context.Context, method, path string, body, out any) ([]byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	return c.do(ctx, method, path, nil, b, out)
}

func (c *Client) do(ctx context.Context, method, path string, q url.Values, body []byte, out any) ([]byte, error) {
	target := c.base.String() + path
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &UnreachableError{URL: c.URL(), Err: unwrapURLError(err)}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, &UnreachableError{URL: c.URL(), Err: err}
	}
	if resp.StatusCode/100 != 2 {
		return data, refusal(method, target, resp, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return data, fmt.Errorf("%s %s: the answer is not the JSON expected (%v); is %s a lockwarden console?", method, target, err, c.URL())
		}
	}
	return data, nil
}

// unwrapURLError drops net/http's "Get \"url\":" prefix: the error says
// which console failed on its own.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

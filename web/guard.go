package web

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// Browser-facing defences that do not depend on who is signed in: the Host
// allow-list (DNS rebinding), the cross-origin rule for state changes, and
// the response headers (CSP, framing, sniffing, referrer).

// hostPolicy is the set of Host headers the console answers to. A DNS
// rebinding attack points the attacker's own name at 127.0.0.1, so the
// browser sends that name as Host: answering only to names we serve makes
// the rebound page read nothing.
type hostPolicy struct {
	exact map[string]bool // "host:port", lower case
	names map[string]bool // a host name allowed on any port (--allowed-host without a port)
}

func newHostPolicy() *hostPolicy {
	return &hostPolicy{exact: map[string]bool{}, names: map[string]bool{}}
}

var loopbackNames = []string{"localhost", "127.0.0.1", "::1"}

func (p *hostPolicy) addPort(host, port string) {
	p.exact[strings.ToLower(net.JoinHostPort(strings.Trim(host, "[]"), port))] = true
}

// addAllowed adds an --allowed-host entry: "name" (any port) or "name:port".
func (p *hostPolicy) addAllowed(entry string) {
	entry = strings.ToLower(strings.TrimSpace(entry))
	if entry == "" {
		return
	}
	if h, port, err := net.SplitHostPort(entry); err == nil {
		p.addPort(h, port)
		return
	}
	p.names[strings.Trim(entry, "[]")] = true
}

// allows reports whether a request's Host is served here. A Host without a
// port means the scheme's default port.
func (p *hostPolicy) allows(host string, tls bool) bool {
	host = strings.ToLower(host)
	h, port, err := net.SplitHostPort(host)
	if err != nil {
		h = strings.Trim(host, "[]")
		port = "80"
		if tls {
			port = "443"
		}
	}
	if h == "" {
		return false
	}
	return p.names[h] || p.exact[net.JoinHostPort(h, port)]
}

// buildHostPolicy is the policy of a server listening at addr, whose
// configured listen host was listenHost. Before Open (addr nil, Handler
// only) loopback names on any port are served.
func buildHostPolicy(listenHost string, addr net.Addr, allowed []string) *hostPolicy {
	p := newHostPolicy()
	for _, a := range allowed {
		p.addAllowed(a)
	}
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		for _, n := range loopbackNames {
			p.names[n] = true
		}
		return p
	}
	port := strconv.Itoa(tcp.Port)
	if listenHost != "" {
		p.addPort(listenHost, port)
	}
	if tcp.IP.IsLoopback() || tcp.IP.IsUnspecified() {
		for _, n := range loopbackNames {
			p.addPort(n, port)
		}
	}
	if !tcp.IP.IsUnspecified() {
		p.addPort(tcp.IP.String(), port)
		return p
	}
	// Listening on every address: every address of this machine is ours,
	// and so is its host name. Names in front of a proxy need
	// --allowed-host.
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok {
				p.addPort(ipn.IP.String(), port)
			}
		}
	}
	if hn, err := os.Hostname(); err == nil && hn != "" {
		p.addPort(hn, port)
	}
	return p
}

// checkHost refuses requests for hosts the console does not serve. The
// probes are exempt: orchestrators address them by pod IP, and they reveal
// nothing.
func (s *Server) checkHost(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
			return next(c)
		}
		if !s.hosts.Load().allows(r.Host, r.TLS != nil) {
			return &httpError{Status: http.StatusForbidden,
				Message: fmt.Sprintf("this console does not answer to host %q; start it with --allowed-host to add one", clipText(r.Host, 100))}
		}
		return next(c)
	}
}

func clipText(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// isLoopbackListen reports whether listen ("host:port") accepts connections
// only from this machine. It is decided before listening, so a console
// that must refuse to start never opens a public socket, even briefly.
func isLoopbackListen(ctx context.Context, listen string) (bool, error) {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false, fmt.Errorf("web: listen address %q: %w", listen, err)
	}
	if host == "" {
		return false, nil // all interfaces
	}
	if strings.EqualFold(host, "localhost") {
		return true, nil
	}
	if ip := net.ParseIP(strings.Trim(host, "[]")); ip != nil {
		return ip.IsLoopback(), nil
	}
	ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return false, fmt.Errorf("web: resolving listen host %q: %w", host, err)
	}
	for _, ip := range ips {
		if !ip.IP.IsLoopback() {
			return false, nil
		}
	}
	return len(ips) > 0, nil
}

// crossOrigin refuses state-changing requests a browser sent on behalf of
// another site, using the standard library's rule: Sec-Fetch-Site decides
// when present (same-origin or none pass), otherwise an Origin header must
// name the request's Host; a request with neither is not from a browser
// page (curl, a script) and passes, since nothing a forged page can make a
// browser send lacks both. No token, so scripts on the admin's machine work
// in local mode too. Origins of --allowed-host names are trusted, for old
// browsers (no Sec-Fetch-Site) behind a proxy that rewrites Host.
//
// It calls Check rather than going through echo.WrapMiddleware: the
// wrapped handler's refusal writes its own plain-text 403 through a deny
// handler that sees only (w, r), bypassing the one error mapping (HTML or
// JSON), the audit outcome and the request log; Check is the same
// decision returned as an error.
func crossOrigin(allowedHosts []string) echo.MiddlewareFunc {
	cop := http.NewCrossOriginProtection()
	for _, o := range trustedOrigins(allowedHosts) {
		// Entries were parsed by trustedOrigins; one that still fails is
		// just not trusted.
		_ = cop.AddTrustedOrigin(o)
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if err := cop.Check(c.Request()); err != nil {
				return &httpError{Status: http.StatusForbidden,
					Message: "cross-origin request refused: " + err.Error() + "; use the console's own pages, or send no Origin (scripts)",
					Err:     err}
			}
			return next(c)
		}
	}
}

// trustedOrigins turns --allowed-host entries into origins: "name:port"
// into http and https on that port, "name" into both on default ports.
func trustedOrigins(allowedHosts []string) []string {
	var out []string
	for _, a := range allowedHosts {
		a = strings.ToLower(strings.TrimSpace(a))
		if a == "" || strings.ContainsAny(a, "/?#@ ") {
			continue
		}
		if _, err := url.Parse("http://" + a); err != nil {
			continue
		}
		out = append(out, "http://"+a, "https://"+a)
	}
	return out
}

// originMatchesHost: the Origin's host and port are the request's. "null"
// (sandboxed frames, file: pages) never matches. The websocket handshake
// uses it: a GET, which cross-origin protection lets through.
func originMatchesHost(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return strings.EqualFold(u.Host, host)
}

// secureHeaders: nothing may frame the console, no content is sniffed, no
// referrer leaks lock names to other sites. Echo's Secure sets these; its
// CSP is one fixed string, so the policy is contentSecurityPolicy's.
var secureHeaders = middleware.SecureWithConfig(middleware.SecureConfig{
	ContentTypeNosniff: "nosniff",
	XFrameOptions:      "DENY",
	ReferrerPolicy:     "no-referrer",
})

// contentSecurityPolicy: no inline script or style may run (the pages have
// none). connect-src names the websocket explicitly because older browsers
// do not count ws: as 'self', which needs this request's Host; Host was
// checked against the allow-list before this runs.
func contentSecurityPolicy(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		host := c.Request().Host
		connect := "'self'"
		if host != "" && !strings.ContainsAny(host, " ;,'\"") {
			connect += " ws://" + host + " wss://" + host
		}
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "+
			"connect-src "+connect+"; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		return next(c)
	}
}

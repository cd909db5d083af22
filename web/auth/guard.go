package auth

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// Browser-facing defences that do not depend on who is signed in: the Host
// allow-list (DNS rebinding), the cross-origin rule for state changes, and
// the response headers (CSP, framing, sniffing, referrer).

// HostPolicy is the set of Host headers the console answers to. A DNS
// rebinding attack points the attacker's own name at 127.0.0.1, so the
// browser sends that name as Host: answering only to names we serve makes
// the rebound page read nothing.
type HostPolicy struct {
	exact map[string]bool // "host:port", lower case
	names map[string]bool // a host name allowed on any port (--allowed-host without a port)
}

func newHostPolicy() *HostPolicy {
	return &HostPolicy{exact: map[string]bool{}, names: map[string]bool{}}
}

var loopbackNames = []string{"localhost", "127.0.0.1", "::1"}

func (p *HostPolicy) addPort(host, port string) {
	p.exact[strings.ToLower(net.JoinHostPort(strings.Trim(host, "[]"), port))] = true
}

// addAllowed adds an --allowed-host entry: "name" (any port) or "name:port".
func (p *HostPolicy) addAllowed(entry string) {
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

// Allows reports whether a request's Host is served here. A Host without a
// port means the scheme's default port.
func (p *HostPolicy) Allows(host string, tls bool) bool {
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

// Check refuses requests for hosts the console does not serve
// (ErrForbidden). The probes are exempt: orchestrators address them by pod
// IP, and they reveal nothing.
func (p *HostPolicy) Check(r *http.Request) error {
	if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" || p.Allows(r.Host, r.TLS != nil) {
		return nil
	}
	host := r.Host
	if len(host) > 100 {
		host = host[:100] + "…"
	}
	return forbidden(fmt.Sprintf("this console does not answer to host %q; start it with --allowed-host to add one", host))
}

// BuildHostPolicy is the policy of a server listening at addr, whose
// configured listen host was listenHost. Before the server listens (addr
// nil) loopback names on any port are served.
func BuildHostPolicy(listenHost string, addr net.Addr, allowed []string) *HostPolicy {
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

// CheckExposure refuses configurations that would let anyone who can reach
// the console break locks: no admin token on a listener that is not
// loopback, a viewer token without an admin token, or one token for both
// roles. The listen host is resolved, never bound, so a refused console
// never opens a public socket.
func CheckExposure(ctx context.Context, listen, adminToken, viewerToken string) error {
	if err := CheckTokens(adminToken, viewerToken); err != nil {
		return err
	}
	switch {
	case viewerToken != "" && adminToken == "":
		return fmt.Errorf("a viewer token needs an admin token too (set LOCKWARDEN_ADMIN_TOKEN or --admin-token)")
	case adminToken != "" && adminToken == viewerToken:
		return fmt.Errorf("the admin and viewer tokens must differ")
	case adminToken != "":
		return nil
	}
	loop, err := isLoopbackListen(ctx, listen)
	if err != nil {
		return err
	}
	if !loop {
		return fmt.Errorf("refusing to listen on %s without an admin token: anyone who can reach it could break locks "+
			"and change limiters; set LOCKWARDEN_ADMIN_TOKEN (or --admin-token), or listen on loopback (e.g. 127.0.0.1:8080)", listen)
	}
	return nil
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

// CrossOrigin refuses state-changing requests a browser sent on behalf of
// another site, using the standard library's rule: Sec-Fetch-Site decides
// when present (same-origin or none pass), otherwise an Origin header must
// name the request's Host; a request with neither is not from a browser
// page (curl, a script) and passes, since nothing a forged page can make a
// browser send lacks both. No token, so scripts on the admin's machine work
// in local mode too. Origins of --allowed-host names are trusted, for old
// browsers (no Sec-Fetch-Site) behind a proxy that rewrites Host.
//
// It is http.CrossOriginProtection's Check, returned as an *inspect.Error, so the
// console's one error mapping (HTML or JSON), the audit outcome and the
// request log see it; the protection's own handler would write a plain
// 403 that bypasses all three.
type CrossOrigin struct{ cop *http.CrossOriginProtection }

// NewCrossOrigin trusts the origins of the --allowed-host entries.
func NewCrossOrigin(allowedHosts []string) *CrossOrigin {
	cop := http.NewCrossOriginProtection()
	for _, o := range trustedOrigins(allowedHosts) {
		// Entries were parsed by trustedOrigins; one that still fails is
		// just not trusted.
		_ = cop.AddTrustedOrigin(o)
	}
	return &CrossOrigin{cop: cop}
}

// Check refuses r (ErrForbidden) when it is a cross-origin state change.
func (o *CrossOrigin) Check(r *http.Request) error {
	if err := o.cop.Check(r); err != nil {
		return &inspect.Error{Code: inspect.CodeForbidden, Err: fmt.Errorf("%w: %w", ErrForbidden, err),
			Message: "cross-origin request refused: " + err.Error() + "; use the console's own pages, or send no Origin (scripts)"}
	}
	return nil
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

// SameOrigin admits browsers only from the page's own host and port; a
// page on another site (or another port of this host) must not read the
// console's live data with the viewer's cookies. The websocket handshake
// uses it: a GET, which CrossOrigin lets through. Clients that send no
// Origin (scripts, curl) are not browsers.
func SameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	return origin == "" || originMatchesHost(origin, r.Host)
}

// originMatchesHost: the Origin's host and port are the request's. "null"
// (sandboxed frames, file: pages) never matches.
func originMatchesHost(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return strings.EqualFold(u.Host, host)
}

// SetSecurityHeaders sets the headers of every response: nothing may frame
// the console, no content is sniffed, no referrer leaks lock names to
// other sites, and no inline script or style may run (the pages have
// none). connect-src names the websocket explicitly because older browsers
// do not count ws: as 'self', which needs this request's Host; call it
// after HostPolicy.Check accepted that Host.
func SetSecurityHeaders(h http.Header, host string) {
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	connect := "'self'"
	if host != "" && !strings.ContainsAny(host, " ;,'\"") {
		connect += " ws://" + host + " wss://" + host
	}
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "+
		"connect-src "+connect+"; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

// MinTokenLen is the shortest token accepted. A token is the only secret
// between the network and its role; anything shorter is guessable in bulk.
const MinTokenLen = 16

// CheckTokens refuses tokens too short to resist guessing, saying how to
// make a good one.
func CheckTokens(adminToken, viewerToken string) error {
	for _, t := range []struct{ flag, env, tok string }{
		{"--admin-token", "LOCKWARDEN_ADMIN_TOKEN", adminToken},
		{"--viewer-token", "LOCKWARDEN_VIEWER_TOKEN", viewerToken},
	} {
		if t.tok != "" && len(t.tok) < MinTokenLen {
			return fmt.Errorf("%s (or %s) is %d bytes; a token needs at least %d, and 32 random bytes are better: "+
				"generate one with 'openssl rand -base64 32' or 'head -c 32 /dev/urandom | base64'",
				t.flag, t.env, len(t.tok), MinTokenLen)
		}
	}
	return nil
}

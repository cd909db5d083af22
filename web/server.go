// Package web is lockwarden's console: an Echo server with server-rendered
// pages, a JSON API, and a websocket that streams one sampler's frames to
// every viewer.
//
// Redis work does not grow with the number of viewers: one sampler reads
// Redis once per tick, builds the frame bytes once, and one hub hands the
// same bytes to every websocket. A viewer that cannot keep up is dropped.
package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"
	"golang.org/x/net/netutil"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/admin"
	"github.com/lockwarden/lockwarden/web/auth"
)

// Config is what a Server needs. Inspector is required; the rest has defaults.
type Config struct {
	Inspector *inspect.Inspector
	// Listen is the TCP address, e.g. "127.0.0.1:8080" ("127.0.0.1:0" in tests).
	Listen string
	// Match is the SCAN MATCH pattern that bounds what the console sees; "" is "*".
	Match string
	// AdminToken grants the admin role (everything); ViewerToken the viewer
	// role (pages, API reads, websocket). API clients send one as
	// "Authorization: Bearer <token>"; browsers sign in with it on /login.
	// With neither set the console runs in local mode (every client is an
	// admin), which Open allows only on a loopback listener.
	AdminToken  string
	ViewerToken string
	// AllowedHosts are extra Host header values the console answers to,
	// "name" (any port) or "name:port": the names a proxy or DNS gives it.
	// The listen address (and its loopback aliases) is always allowed.
	AllowedHosts []string
	// SessionIdle and SessionMaxAge end a browser sign-in after that long
	// unused and that long after it began (defaults 12 h each).
	SessionIdle, SessionMaxAge time.Duration
	// AuthNamespace separates the sign-in state (secret, sessions, failure
	// counts) of consoles sharing a Redis (default auth.DefaultNamespace).
	AuthNamespace string
	// AuditKey is the change trail (default inspect.AuditKey), kept for
	// AuditRetention (default inspect.DefaultAuditRetention). Refused
	// requests go to AuditKey+":refused" (inspect.RefusedAuditKey for the
	// default), capped at about AuditMaxLen records (default
	// inspect.DefaultAuditMaxLen).
	AuditKey       string
	AuditRetention time.Duration
	AuditMaxLen    int64
	// MaxWSClients caps concurrent websocket viewers (default 500);
	// MaxWSPerSource caps one address's viewer connections (default 8).
	// Admins are not counted against either: they always get one.
	MaxWSClients   int
	MaxWSPerSource int
	// SessionRecheck is how often a browser's websocket checks that its
	// session still lives (default 30 s); it is closed once it does not.
	SessionRecheck time.Duration
	// ReadTimeout bounds reading a whole request, body included (default
	// 30 s); MaxConns caps open connections (default 1024).
	ReadTimeout time.Duration
	MaxConns    int
	Logger      *slog.Logger
	// TickInterval is the sampler period (default 200 ms, one stats bucket).
	TickInterval time.Duration
	// DiscoverInterval is how long a reconciliation pass over the keyspace
	// should take (default inspect.DefaultDiscoveryPass, a minute): the
	// paced walk's target, or the period of full passes where the walk
	// cannot SCAN (a Cluster). Names store clients announce and keyspace
	// notifications report are listed within a tick or two regardless.
	DiscoverInterval time.Duration
	// DiscoveryBudget is the share of one Redis core the console may use
	// (default inspect.DefaultDiscoveryBudget): sampling is paid first, the
	// reconciliation walk paces itself on the rest.
	DiscoveryBudget float64
	// KeyspaceEvents says whether discovery uses keyspace notifications
	// (default auto: when the server publishes them).
	KeyspaceEvents inspect.KeyEventsMode
	// Alerts adjusts the alert rules and names the webhook.
	Alerts AlertConfig
	// MetricsMatch, a glob, limits which objects get per-object series in
	// /metrics; MetricsTop caps them per family, busiest first (default
	// DefaultMetricsTop; negative for none).
	MetricsMatch string
	MetricsTop   int
}

func (c *Config) metricsTop() int {
	switch {
	case c == nil || c.MetricsTop == 0:
		return DefaultMetricsTop
	case c.MetricsTop < 0:
		return 0
	}
	return c.MetricsTop
}

func (c *Config) logger() *slog.Logger {
	if c == nil || c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}

func (c *Config) tickInterval() time.Duration {
	if c == nil || c.TickInterval <= 0 {
		return 200 * time.Millisecond
	}
	return c.TickInterval
}

func (c *Config) discoverInterval() time.Duration {
	if c == nil || c.DiscoverInterval <= 0 {
		return inspect.DefaultDiscoveryPass
	}
	return c.DiscoverInterval
}

func (c *Config) match() string {
	if c == nil || c.Match == "" {
		return "*"
	}
	return c.Match
}

func (c *Config) maxWSClients() int {
	if c == nil || c.MaxWSClients <= 0 {
		return defaultMaxWSClients
	}
	return c.MaxWSClients
}

// defaultMaxWSClients: each viewer costs two goroutines and a 64-frame
// buffer; a console with more viewers than this is being abused.
const defaultMaxWSClients = 500

// bodyLimit bounds request bodies (Echo's BodyLimit: 413 at once when the
// length is declared, while reading when not); no form or JSON body of the
// console comes close, so anything larger is a mistake or an attack.
// toHTTPError's 413 message names the same limit.
const bodyLimit = "64K"

// shutdownTimeout bounds Close so a stuck client cannot hold a deploy.
const shutdownTimeout = 5 * time.Second

// Server is the console. Create it with New, start it with Open, stop it
// with Close.
type Server struct {
	cfg     Config
	insp    *inspect.Inspector
	log     *slog.Logger
	echo    *echo.Echo
	hub     *hub
	sampler *sampler
	events  *eventLog
	metrics *metrics
	nodes   nodeHealth
	auth    *auth.Authority
	admin   *admin.Service
	// actions names the admin action of each state-changing route
	// ("METHOD /route"), for the audit records of refused requests.
	actions map[string]string

	metricsHandler http.Handler
	objects        *objectCounters
	alerts         *alerter
	webhook        *webhook // nil without Config.Alerts.Webhook
	// hosts is the Host allow-list; replaced once Open knows the port.
	hosts   atomic.Pointer[auth.HostPolicy]
	wsSlots *wsSlots

	mu       sync.Mutex
	baseCtx  context.Context // Open's ctx without its cancellation, for Close
	httpSrv  *http.Server
	addr     net.Addr
	cancel   context.CancelFunc
	bg       sync.WaitGroup // sampler, event listener, hub, http serve
	ws       sync.WaitGroup // websocket reader and writer goroutines
	wsMu     sync.Mutex     // orders ws.Add against Close's ws.Wait
	wsClosed bool           // under wsMu: no new websocket goroutines
	opened   bool
	closed   bool
	closeErr error
}

// New builds a Server; nothing runs until Open.
func New(cfg Config) *Server {
	s := &Server{
		cfg:     cfg,
		insp:    cfg.Inspector,
		log:     cfg.logger(),
		metrics: &metrics{},
		actions: map[string]string{},
	}
	s.auth = s.newAuthority()
	s.wsSlots = newWSSlots(cfg.maxWSClients(), cfg.maxWSPerSource())
	s.hosts.Store(auth.BuildHostPolicy("", nil, cfg.AllowedHosts))
	s.events = newEventLog(eventLogSize)
	s.hub = newHub(s.metrics)
	s.sampler = newSampler(s)
	s.admin = s.newAdmin()
	s.objects = newObjectCounters()
	// The rules are read while the console runs: its own copy of the maps.
	s.cfg.Alerts.Off, s.cfg.Alerts.For = maps.Clone(cfg.Alerts.Off), maps.Clone(cfg.Alerts.For)
	s.alerts = newAlerter(&s.cfg.Alerts, s.nodeStatuses, s.sampler.hist)
	s.alerts.authFailures = s.auth.Failures().Recent
	if cfg.Alerts.Webhook != "" {
		s.webhook = newWebhook(cfg.Alerts.Webhook, s.log)
		s.alerts.notify = s.webhook.enqueue
	}
	s.metricsHandler = newMetricsHandler(s.newRegistry())
	s.echo = s.routes()
	return s
}

// Handler serves the console without listening (httptest, embedding).
// Live data flows only after Open.
func (s *Server) Handler() http.Handler { return s.echo }

// Open listens on cfg.Listen, starts the sampler, the event listener and the
// hub, and serves in the background. ctx bounds the background work: when it
// ends, sampling and the event subscription stop (Close is still needed to
// release the listener). Open does not fail when Redis is down; the console
// then shows that.
func (s *Server) Open(ctx context.Context) error {
	if s.insp == nil {
		return errors.New("web: Config.Inspector is nil")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.opened {
		return errors.New("web: server already opened")
	}
	if err := CheckExposure(ctx, s.cfg.Listen, s.cfg.AdminToken, s.cfg.ViewerToken); err != nil {
		return err
	}
	if w := s.cfg.Alerts.Webhook; w != "" {
		if err := CheckWebhookURL(w); err != nil {
			return fmt.Errorf("web: %w", err)
		}
	}
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("web: listen %q: %w", s.cfg.Listen, err)
	}
	ln = netutil.LimitListener(ln, s.cfg.maxConns())
	s.opened = true
	s.addr = ln.Addr()
	listenHost, _, _ := net.SplitHostPort(s.cfg.Listen)
	s.hosts.Store(auth.BuildHostPolicy(listenHost, s.addr, s.cfg.AllowedHosts))
	s.baseCtx = context.WithoutCancel(ctx)

	runCtx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	s.httpSrv = &http.Server{
		Handler:           s.echo,
		ReadHeaderTimeout: 10 * time.Second,
		// The whole request, body included: a body sent a byte at a time
		// must not hold a connection (websockets clear it on upgrade).
		ReadTimeout: s.cfg.readTimeout(),
		IdleTimeout: 2 * time.Minute,
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}

	s.hub.start(&s.bg)
	s.bg.Add(4)
	go func() { defer s.bg.Done(); s.sampler.run(runCtx) }()
	go func() { defer s.bg.Done(); s.alertsLoop(runCtx.Done()) }()
	if s.webhook != nil {
		s.bg.Add(1)
		go func() { defer s.bg.Done(); s.webhook.run(runCtx) }()
	}
	go func() { defer s.bg.Done(); s.listenEvents(runCtx) }()
	s.bg.Add(1)
	go func() { defer s.bg.Done(); s.probeNodes(runCtx) }()
	s.bg.Add(1)
	go func() { defer s.bg.Done(); s.auditSummaries(runCtx) }()
	go func() {
		defer s.bg.Done()
		if err := s.httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("http serve stopped", "err", err)
		}
	}()
	s.log.Info("console listening", "url", s.urlLocked())
	return nil
}

// URL is the base URL of the running server, e.g. "http://127.0.0.1:43121".
// An unspecified listen host is reported as loopback.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.urlLocked()
}

func (s *Server) urlLocked() string {
	tcp, ok := s.addr.(*net.TCPAddr)
	if !ok {
		return ""
	}
	host := "127.0.0.1"
	if !tcp.IP.IsUnspecified() && tcp.IP != nil {
		host = tcp.IP.String()
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(tcp.Port))
}

// Close stops the server: websockets get close code 1001 (going away), the
// sampler and the subscription stop, and in-flight requests get at most
// shutdownTimeout to finish. Calling it again returns the first result.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return s.closeErr
	}
	s.closed = true
	if !s.opened {
		return nil
	}
	s.cancel()
	s.wsMu.Lock()
	s.wsClosed = true
	s.wsMu.Unlock()
	s.hub.shutdown()
	ctx, cancel := context.WithTimeout(s.baseCtx, shutdownTimeout)
	defer cancel()
	err := s.httpSrv.Shutdown(ctx)
	if err != nil {
		// Handlers that ignore shutdown must not keep the process alive.
		_ = s.httpSrv.Close()
	}
	waitBounded(&s.ws, time.Until(deadlineOf(ctx)))
	waitBounded(&s.bg, time.Until(deadlineOf(ctx))+time.Second)
	s.closeErr = err
	return err
}

// CheckExposure refuses configurations that would let anyone who can
// reach the console break locks (see auth.CheckExposure); Open checks it,
// and the binary checks it before connecting to Redis.
func CheckExposure(ctx context.Context, listen, adminToken, viewerToken string) error {
	return auth.CheckExposure(ctx, listen, adminToken, viewerToken)
}

// redisNodeName names the node the console reads, for node-down alerts.
func redisNodeName(st *inspect.Inspector) string {
	if st == nil {
		return ""
	}
	if c, ok := st.Redis().(*redis.Client); ok {
		return c.Options().Addr
	}
	return "redis"
}

func deadlineOf(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// waitBounded waits for wg but gives up after d, so Close stays bounded even
// if a goroutine is stuck in a Redis call with a long timeout.
func waitBounded(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(max(d, 0))
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// Package web is lockwarden's console over HTTP, one file per screen:
// overview.go (/, /wall, alerts, stats), events.go (/events and the /ws
// stream), locks.go, limiters.go (with the what-if), families.go,
// clients.go, deadlocks.go, audit.go and status.go each register their
// routes and hold their thin handleX handlers, HTML and JSON, and the
// presenters that turn the parts' state into views and JSON. Beside them:
// server.go (Config, Server.Open/Close, which wire the parts below and run
// them), routes.go (the route table, request parameters), middleware.go
// (request IDs and logging, hosts, identity and roles, sign-in), render.go
// (pages, flash banners) and errors.go (the one error -> HTTP status
// mapping). Each part has one job and imports only downwards; none
// imports web:
//
//   - live: the 200 ms tick, walker -> immutable Snapshot, stale rows,
//     recent windows, node health; hands each snapshot to metrics, alert,
//     history and feed, in that order.
//   - events: the lock event log and the pub/sub relay feeding it.
//   - alert: rules over snapshots, the firing set, the webhook.
//   - feed: snapshots, events and alerts -> frames -> hub -> websockets,
//     and the slots that admit them.
//   - history: limiter rollups and lock holds kept in Redis by one
//     elected replica, fed by a Recorder, read through a Cache by the
//     charts and the what-if.
//   - listing: the lock and limiter lists filtered, sorted and paged.
//   - present: what the API and the frames both say of an object.
//   - metrics: Prometheus collectors reading the parts when scraped.
//   - auth: roles, tokens, sessions, the Host/Origin/CSP guard.
//   - admin: force-unlock, release-all, edits, resets, each audited and
//     re-read into live before it returns (no HTTP types).
//
// Redis work does not grow with the number of viewers: live reads Redis
// once per tick, feed builds the frame bytes once, and its hub hands the
// same bytes to every websocket. A viewer that cannot keep up is dropped.
//
// It imports views, static, store, store/inspect and the parts above.
package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/inspect/walk"
	"github.com/lockwarden/lockwarden/web/admin"
	"github.com/lockwarden/lockwarden/web/alert"
	"github.com/lockwarden/lockwarden/web/auth"
	"github.com/lockwarden/lockwarden/web/connlimit"
	"github.com/lockwarden/lockwarden/web/events"
	"github.com/lockwarden/lockwarden/web/feed"
	"github.com/lockwarden/lockwarden/web/history"
	"github.com/lockwarden/lockwarden/web/live"
	"github.com/lockwarden/lockwarden/web/metrics"
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
	// 30 s); MaxConns caps open connections (default 1024), one address
	// (an IPv6 /64) at most a 16th of them, and a connection that has not
	// carried a signed-in request closes after 5 s idle (web/connlimit).
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
	KeyspaceEvents walk.KeyEventsMode
	// Alerts adjusts the alert rules and names the webhook.
	Alerts AlertConfig
	// MetricsMatch, a glob, limits which objects get per-object series in
	// /metrics; MetricsTop caps them per family, busiest first (default
	// metrics.DefaultTop; negative for none).
	MetricsMatch string
	MetricsTop   int
	// HistoryFine and HistoryCoarse are how long a limiter's 10 s and
	// 1 min steps are kept in Redis (defaults history.DefaultFineRetention
	// and DefaultCoarseRetention); HistoryTop is how many limiters, and
	// how many locks, have a history, busiest first (default
	// history.DefaultTop; negative: no history is kept or shown).
	HistoryFine, HistoryCoarse time.Duration
	HistoryTop                 int
}

func (c *Config) match() string {
	if c == nil || c.Match == "" {
		return "*"
	}
	return c.Match
}

func (c *Config) logger() *slog.Logger {
	if c == nil || c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}

// Defaults of the connection limits.
const (
	defaultReadTimeout    = 30 * time.Second
	defaultMaxConns       = 1024
	defaultMaxWSPerSource = 8
	// defaultSessionRecheck: how soon a browser's websocket notices that
	// its session ended.
	defaultSessionRecheck = 30 * time.Second
	// auditSummaryEvery is how often held-back refusals and failed
	// sign-ins are summarised into the refused trail.
	auditSummaryEvery = 10 * time.Second
)

func (c *Config) readTimeout() time.Duration {
	if c == nil || c.ReadTimeout <= 0 {
		return defaultReadTimeout
	}
	return c.ReadTimeout
}

func (c *Config) maxConns() int {
	if c == nil || c.MaxConns <= 0 {
		return defaultMaxConns
	}
	return c.MaxConns
}

func (c *Config) sessionRecheck() time.Duration {
	if c == nil || c.SessionRecheck <= 0 {
		return defaultSessionRecheck
	}
	return c.SessionRecheck
}

func (c *Config) maxWSPerSource() int {
	if c == nil || c.MaxWSPerSource <= 0 {
		return defaultMaxWSPerSource
	}
	return c.MaxWSPerSource
}

// signInAuditKey is the trail of sign-in summaries beside AuditKey (same
// hash tag): sign-ins are not changes, and a loop of them must not crowd
// the change trail.
func (c *Config) signInAuditKey() string {
	if c.AuditKey == "" {
		return inspect.AuditKey + ":sign-ins"
	}
	return c.AuditKey + ":sign-ins"
}

// refusedAuditKey is the trail of refused requests beside AuditKey (same
// hash tag, so a test's or a deployment's trails stay together).
func (c *Config) refusedAuditKey() string {
	if c.AuditKey == "" {
		return inspect.RefusedAuditKey
	}
	return c.AuditKey + ":refused"
}

// historyOff says Config turns the history off (a negative HistoryTop).
func (c *Config) historyOff() bool { return c != nil && c.HistoryTop < 0 }

func (c *Config) historyOptions() *history.Options {
	return &history.Options{FineRetention: c.HistoryFine, CoarseRetention: c.HistoryCoarse, Top: c.HistoryTop}
}

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
	cfg      Config
	insp     *inspect.Inspector
	log      *slog.Logger
	echo     *echo.Echo
	feed     *feed.Feed
	live     *live.Sampler
	events   *events.Log
	relay    *events.Relay
	metrics  *metrics.Metrics
	requests requestCounts
	auth     *auth.Authority
	admin    *admin.Service
	// actions names the admin action of each state-changing route
	// ("METHOD /route"), for the audit records of refused requests.
	actions map[string]string
	// queries are the routes ("METHOD /route") that take a body but
	// change nothing (query in routes.go).
	queries map[string]bool

	// hist runs the history in Redis (none until Open, and none with
	// HistoryTop negative) and hands it the snapshots.
	hist *history.Recorder
	// histObs runs hist's Observe on a goroutine of its own: turning a snapshot
	// of thousands of objects into a sample is no work for the tick's.
	histObs *live.Detached
	// hcache serves the history's reads to requests, once per flush.
	hcache *history.Cache

	alerts  *alert.Engine
	webhook *alert.Webhook // nil without Config.Alerts.Webhook
	// hosts is the Host allow-list; replaced once Open knows the port.
	hosts   atomic.Pointer[auth.HostPolicy]
	wsSlots *feed.Slots

	mu       sync.Mutex
	baseCtx  context.Context // Open's ctx without its cancellation, for Close
	httpSrv  *http.Server
	addr     net.Addr
	cancel   context.CancelFunc
	bg       sync.WaitGroup // sampler, event listener, hub and websockets, http serve
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
		actions: map[string]string{},
		queries: map[string]bool{},
	}
	s.auth = s.newAuthority()
	s.wsSlots = feed.NewSlots(cfg.MaxWSClients, cfg.maxWSPerSource())
	s.hosts.Store(auth.BuildHostPolicy("", nil, cfg.AllowedHosts))
	s.feed = feed.New(feed.Config{CheckOrigin: auth.SameOrigin, Logger: s.log})
	s.events = events.NewLog(events.LogSize, s.feed)
	s.live = live.New(live.Config{Inspector: cfg.Inspector, Match: cfg.Match, TickInterval: cfg.TickInterval,
		DiscoverInterval: cfg.DiscoverInterval, DiscoveryBudget: cfg.DiscoveryBudget, KeyspaceEvents: cfg.KeyspaceEvents,
		Events: s.events, Logger: s.log})
	s.relay = events.NewRelay(cfg.Inspector, s.events, s.liveLocks, s.log)
	s.hist = history.NewRecorder(s.log)
	s.admin = s.newAdmin()
	s.hcache = history.NewCache(s.hist, s.snapshotAt, s.admin.Recent)
	listeners := []alert.Listener{s.feed}
	if cfg.Alerts.Webhook != "" {
		s.webhook = alert.NewWebhook(cfg.Alerts.Webhook, s.log)
		listeners = append(listeners, s.webhook)
	}
	s.alerts = alert.New(cfg.Alerts, s.live.NodeStatuses, s.live.Windows(), listeners...)
	s.alerts.AuthFailures(s.auth.Failures().Recent)
	// The order the parts see each snapshot in: the viewers' frames last,
	// so the alerts they carry are the snapshot's.
	s.metrics = metrics.New(metrics.Config{Live: s.live, Alerts: s.alerts, Counts: s.counts,
		Match: cfg.MetricsMatch, Top: cfg.MetricsTop})
	s.histObs = live.Detach(s.hist)
	s.live.PublishTo(s.metrics, s.alerts, s.histObs, s.feed)
	s.echo = s.routes()
	return s
}

func (s *Server) newAuthority() *auth.Authority {
	opts := auth.Options{Namespace: s.cfg.AuthNamespace,
		Sessions: &auth.SessionOptions{Idle: s.cfg.SessionIdle, MaxAge: s.cfg.SessionMaxAge}}
	if s.insp != nil {
		opts.Redis = s.insp.Redis()
	}
	return auth.New(s.cfg.AdminToken, s.cfg.ViewerToken, opts)
}

func (s *Server) newAdmin() *admin.Service {
	// What a broken hold changes besides the lock: the event log (and so
	// every viewer) and the history's record of how the hold ended.
	cfg := admin.Config{Inspector: s.insp, Live: s.live, Listeners: []admin.Listener{s.events, s.hist},
		Logger: s.log, InScope: s.inScope}
	if s.insp != nil {
		cfg.Audit = s.insp.AuditTrail(s.cfg.AuditKey, s.cfg.AuditRetention)
		cfg.Refused = admin.NewRefusedLog(s.insp.Audit(s.cfg.refusedAuditKey(), s.cfg.AuditMaxLen))
	}
	return admin.New(cfg)
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
	conns := connlimit.New(&connlimit.Options{Max: s.cfg.maxConns()})
	ln = conns.Listener(ln)
	s.opened = true
	s.addr = ln.Addr()
	listenHost, _, _ := net.SplitHostPort(s.cfg.Listen)
	s.hosts.Store(auth.BuildHostPolicy(listenHost, s.addr, s.cfg.AllowedHosts))
	s.baseCtx = context.WithoutCancel(ctx)

	runCtx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	if err := s.openHistory(runCtx); err != nil {
		cancel()
		_ = ln.Close()
		s.opened = false
		return fmt.Errorf("web: %w", err)
	}
	s.httpSrv = &http.Server{
		Handler:           s.echo,
		ReadHeaderTimeout: 10 * time.Second,
		// The whole request, body included: a body sent a byte at a time
		// must not hold a connection (websockets clear it on upgrade).
		ReadTimeout: s.cfg.readTimeout(),
		IdleTimeout: 2 * time.Minute,
		ConnState:   conns.ConnState,
		ConnContext: conns.ConnContext,
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}

	s.feed.Start(&s.bg)
	s.bg.Add(5)
	go func() { defer s.bg.Done(); s.live.Run(runCtx) }()
	go func() { defer s.bg.Done(); s.alerts.Run(runCtx, s.live.Latest) }()
	if s.webhook != nil {
		s.bg.Add(1)
		go func() { defer s.bg.Done(); s.webhook.Run(runCtx) }()
	}
	go func() { defer s.bg.Done(); s.relay.Run(runCtx) }()
	go func() { defer s.bg.Done(); s.live.ProbeNodes(runCtx) }()
	s.bg.Add(1)
	go func() { defer s.bg.Done(); s.live.CheckSettings(runCtx) }()
	s.bg.Add(3)
	go func() { defer s.bg.Done(); s.histObs.Run(runCtx) }()
	go func() { defer s.bg.Done(); s.runAuditSummaries(runCtx) }()
	go func() { defer s.bg.Done(); s.hist.Run(runCtx) }()
	go func() {
		defer s.bg.Done()
		if err := s.httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("http serve stopped", "err", err)
		}
	}()
	s.log.Info("console listening", "url", s.urlLocked())
	return nil
}

// openHistory starts the history on the console's Redis, unless Config
// turns it off. It outlives ctx's cancellation: the Recorder's Run closes
// it when the console stops, handing the writer lock back.
func (s *Server) openHistory(ctx context.Context) error {
	if s.cfg.historyOff() {
		return nil
	}
	return s.hist.Open(ctx, s.insp.Redis(), s.cfg.historyOptions())
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
	s.feed.Close()
	ctx, cancel := context.WithTimeout(s.baseCtx, shutdownTimeout)
	defer cancel()
	err := s.httpSrv.Shutdown(ctx)
	if err != nil {
		// Handlers that ignore shutdown must not keep the process alive.
		_ = s.httpSrv.Close()
	}
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

// CheckTokens refuses tokens too short to resist guessing (see
// auth.CheckTokens); the binary checks its flags with it.
func CheckTokens(adminToken, viewerToken string) error {
	return auth.CheckTokens(adminToken, viewerToken)
}

// liveLocks is the locks of the latest snapshot (the event listener's
// sharded subscriptions follow them).
func (s *Server) liveLocks() []inspect.LockInfo {
	if sn := s.live.Latest(); sn != nil {
		return sn.Locks
	}
	return nil
}

// snapshotAt is the latest snapshot's Redis time (ms), 0 before the first.
func (s *Server) snapshotAt() int64 {
	if sn := s.live.Latest(); sn != nil {
		return sn.At
	}
	return 0
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

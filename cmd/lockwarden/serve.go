package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/redisconn"
	"github.com/lockwarden/lockwarden/web"
)

const (
	defaultRedisURL = "redis://127.0.0.1:6379"
	defaultListen   = "127.0.0.1:8080"

	// pingTimeout bounds the start-up check: an operator who typed a wrong
	// address wants the answer quickly, not after go-redis' retries.
	pingTimeout = 3 * time.Second
	// closeTimeout bounds the whole shutdown after a signal, leaving the
	// rest of the promised 5 s for process exit.
	closeTimeout = 4500 * time.Millisecond
)

// serveConfig is everything `lockwarden serve` needs, after flags and
// environment are merged.
type serveConfig struct {
	RedisURL    string
	Listen      string
	Match       string
	AdminToken  string
	ViewerToken string
	// AllowedHosts is a comma-separated list of extra Host names ("name"
	// or "name:port") the console answers to.
	AllowedHosts string
	// SessionIdle and SessionMaxAge end a browser sign-in after that long
	// unused, and after that long in all.
	SessionIdle, SessionMaxAge time.Duration
	// TokenLocks and Counters say which string keys are token locks and
	// access counters (see objectPatterns).
	TokenLocks listFlag
	Counters   listFlag
	// DeadlineLocks are timestamp locks, SETNX of a deadline (--deadline-lock-pattern).
	DeadlineLocks listFlag
	Conventions   conventionFlags // --laravel-prefix, --spring-lock-registry, --dotnet-lock-pattern (patterns.go)
	Alerts        alertFlags      // --alert-* and --metrics-* (alertflags.go)
	Discovery     discoveryFlags  // --keyspace-events, --discovery-* (discoveryflags.go)
	History       historyFlags    // --history-* (historyflags.go)
}

// allowedHosts splits the --allowed-host list.
func (c serveConfig) allowedHosts() []string {
	var out []string
	for _, h := range strings.Split(c.AllowedHosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, h)
		}
	}
	return out
}

// serveEnv names, per flag, the environment variable used when the flag
// is absent from the command line.
var serveEnv = map[string]string{
	"redis":                 "LOCKWARDEN_REDIS_URL",
	"listen":                "LOCKWARDEN_LISTEN",
	"admin-token":           "LOCKWARDEN_ADMIN_TOKEN",
	"viewer-token":          "LOCKWARDEN_VIEWER_TOKEN",
	"allowed-host":          "LOCKWARDEN_ALLOWED_HOSTS",
	"session-idle":          "LOCKWARDEN_SESSION_IDLE",
	"session-max-age":       "LOCKWARDEN_SESSION_MAX_AGE",
	"token-lock-pattern":    "LOCKWARDEN_TOKEN_LOCK_PATTERNS",
	"counter":               "LOCKWARDEN_COUNTERS",
	"deadline-lock-pattern": "LOCKWARDEN_DEADLINE_LOCK_PATTERNS",
}

// parseServeFlags merges flags over the environment over the defaults. The
// environment is applied after parsing, not as flag defaults, so that -h
// never prints a token taken from the environment.
func parseServeFlags(args []string, getenv func(string) string, stderr io.Writer) (serveConfig, error) {
	var cfg serveConfig
	fs := flag.NewFlagSet("lockwarden serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.RedisURL, "redis", defaultRedisURL, "Redis `URL`: redis:// or rediss:// of a node (a Cluster is detected; more seeds as ?addr=host:port), or redis+sentinel://host:port[,host:port]/<master>[/<db>] (env LOCKWARDEN_REDIS_URL)")
	fs.StringVar(&cfg.Listen, "listen", defaultListen, "HTTP listen `address` (env LOCKWARDEN_LISTEN)")
	fs.StringVar(&cfg.Match, "match", "*", "SCAN MATCH `pattern` selecting the keys to show")
	fs.StringVar(&cfg.AdminToken, "admin-token", "", "`TOKEN` of the admin role: sign in with it, or send it as 'Authorization: Bearer' (env LOCKWARDEN_ADMIN_TOKEN; required unless --listen is loopback)")
	fs.StringVar(&cfg.ViewerToken, "viewer-token", "", "`TOKEN` of the read-only viewer role, e.g. for a wall display (env LOCKWARDEN_VIEWER_TOKEN)")
	fs.StringVar(&cfg.AllowedHosts, "allowed-host", "", "extra Host `names` the console answers to, comma-separated, \"name\" or \"name:port\" (env LOCKWARDEN_ALLOWED_HOSTS)")
	fs.DurationVar(&cfg.SessionIdle, "session-idle", defaultSessionIdle, "end a browser sign-in after this long unused (env LOCKWARDEN_SESSION_IDLE)")
	fs.DurationVar(&cfg.SessionMaxAge, "session-max-age", defaultSessionMaxAge, "end a browser sign-in this long after it began, however busy (env LOCKWARDEN_SESSION_MAX_AGE)")
	fs.Var(&cfg.TokenLocks, "token-lock-pattern", tokenLockFlagUsage)
	fs.Var(&cfg.Counters, "counter", counterFlagUsage)
	fs.Var(&cfg.DeadlineLocks, "deadline-lock-pattern", deadlineLockFlagUsage)
	alertEnv := cfg.Alerts.register(fs)
	discEnv := cfg.Discovery.register(fs)
	convEnv := cfg.Conventions.register(fs)
	histEnv := cfg.History.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return cfg, err
	}
	applyEnv(fs, serveEnv, getenv)
	applyEnv(fs, alertEnv, getenv)
	applyEnv(fs, discEnv, getenv)
	applyEnv(fs, convEnv, getenv)
	applyEnv(fs, histEnv, getenv)
	if _, err := cfg.Discovery.settings(); err != nil {
		fmt.Fprintf(stderr, "lockwarden serve: %v\n", err)
		return cfg, errUsage
	}
	if _, err := cfg.History.settings(); err != nil {
		fmt.Fprintf(stderr, "lockwarden serve: %v\n", err)
		return cfg, errUsage
	}
	if cfg.Match == "" {
		cfg.Match = "*"
	}
	if err := web.CheckTokens(cfg.AdminToken, cfg.ViewerToken); err != nil {
		fmt.Fprintf(stderr, "lockwarden serve: %v\n", err)
		return cfg, errUsage
	}
	if cfg.SessionIdle <= 0 || cfg.SessionMaxAge <= 0 {
		fmt.Fprintf(stderr, "lockwarden serve: --session-idle and --session-max-age must be positive durations, e.g. 12h\n")
		return cfg, errUsage
	}
	if _, err := cfg.patterns(); err != nil {
		// One line, not the whole flag list: the mistake is in a value.
		fmt.Fprintf(stderr, "lockwarden serve: %v\n", err)
		return cfg, errUsage
	}
	if _, _, _, err := cfg.Alerts.console(); err != nil {
		fmt.Fprintf(stderr, "lockwarden serve: %v\n", err)
		return cfg, errUsage
	}
	return cfg, nil
}

// parseFlags parses args and rejects positional leftovers, which are almost
// always a mistyped flag.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return flag.ErrHelp
		}
		return errUsage // fs has printed the error and the flags
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		fs.Usage()
		return errUsage
	}
	return nil
}

// applyEnv sets every flag that was not given on the command line from its
// environment variable, when that is non-empty.
func applyEnv(fs *flag.FlagSet, env map[string]string, getenv func(string) string) {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for name, key := range env {
		if given[name] {
			continue
		}
		if v := getenv(key); v != "" {
			fs.Set(name, v) // string and list flags accept any value
		}
	}
}

func runServe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parseServeFlags(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	// An unsafe exposure is refused before anything else happens, so the
	// operator hears about it first.
	if err := web.CheckExposure(ctx, cfg.Listen, cfg.AdminToken, cfg.ViewerToken); err != nil {
		return err
	}
	log := newLogger(stderr)

	rdb, err := connectRedis(ctx, cfg.RedisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()

	patterns, _ := cfg.patterns()                               // checked by parseServeFlags
	alerts, metricsMatch, metricsTop, _ := cfg.Alerts.console() // checked by parseServeFlags
	discovery, _ := cfg.Discovery.settings()                    // checked by parseServeFlags
	hist, _ := cfg.History.settings()                           // checked by parseServeFlags
	con, err := openConsole(ctx, consoleConfig{
		Inspector:     inspect.New(rdb, &inspect.Options{Patterns: patterns}),
		Listen:        cfg.Listen,
		Match:         cfg.Match,
		AdminToken:    cfg.AdminToken,
		ViewerToken:   cfg.ViewerToken,
		AllowedHosts:  cfg.allowedHosts(),
		SessionIdle:   cfg.SessionIdle,
		SessionMaxAge: cfg.SessionMaxAge,
		Logger:        log,
		Alerts:        alerts,
		MetricsMatch:  metricsMatch,
		MetricsTop:    metricsTop,
		Discovery:     discovery,
		History:       hist,
	})
	if err != nil {
		return listenErr(cfg.Listen, err)
	}
	fmt.Fprintln(stdout, "lockwarden listening on", con.URL())

	<-ctx.Done()
	log.Info("shutting down", "reason", context.Cause(ctx))
	return closeBounded(con.Close, closeTimeout)
}

// connectRedis opens a client for whatever rawURL names (a node, a
// Cluster found through any node, a Sentinel primary; see package
// redisconn) and checks that Redis answers. Every error it returns names
// the URL without its password and nothing else from the URL's secret part.
func connectRedis(ctx context.Context, rawURL string) (redis.UniversalClient, error) {
	rdb, _, err := redisconn.Open(ctx, rawURL, &redisconn.Options{ClientName: "lockwarden", PingTimeout: pingTimeout})
	if err != nil {
		return nil, errors.New(strings.TrimPrefix(scrub(err.Error(), rawURL), "redisconn: "))
	}
	return rdb, nil
}

// redactURL returns rawURL with any password replaced by "xxxxx". It also
// copes with strings net/url rejects, since those are the ones most likely
// to end up in an error message.
func redactURL(rawURL string) string {
	if u, err := url.Parse(rawURL); err == nil {
		return u.Redacted()
	}
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return "(unparsable URL)"
	}
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		user, _, _ := strings.Cut(rest[:at], ":")
		return scheme + "://" + user + ":xxxxx" + rest[at:]
	}
	return rawURL
}

// scrub removes the password of rawURL from msg, as a last line of defence
// against an error text that quotes it.
func scrub(msg, rawURL string) string {
	pw := urlPassword(rawURL)
	if pw == "" {
		return msg
	}
	return strings.ReplaceAll(msg, pw, "xxxxx")
}

func urlPassword(rawURL string) string {
	if u, err := url.Parse(rawURL); err == nil {
		pw, _ := u.User.Password()
		return pw
	}
	_, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return ""
	}
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return ""
	}
	_, pw, _ := strings.Cut(rest[:at], ":")
	return pw
}

// closeBounded runs closeFn and gives up waiting after d, so a stuck
// shutdown cannot keep the process alive past what the operator expects.
func closeBounded(closeFn func() error, d time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- closeFn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		return fmt.Errorf("shutdown did not finish within %s", d.Round(100*time.Millisecond))
	}
}

// newLogger returns the process logger and routes go-redis' own logging
// into it at debug level: its pool prints a line per failed dial, which
// would bury the one line that explains a failed start.
func newLogger(w io.Writer) *slog.Logger {
	log := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
	redis.SetLogger(redisLogger{log})
	return log
}

type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.DebugContext(ctx, fmt.Sprintf(format, v...), "source", "go-redis")
}

// patterns are the string kinds' patterns and the conventions' settings.
func (c serveConfig) patterns() (inspect.ObjectPatterns, error) {
	p, err := objectPatterns(c.TokenLocks, c.Counters, c.DeadlineLocks)
	if err != nil {
		return p, err
	}
	return c.Conventions.apply(p)
}

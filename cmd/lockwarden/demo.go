package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"syscall"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// trafficStopTimeout bounds how long the demo waits for its traffic to wind
// down (workers release what they hold) before tearing down the console.
const trafficStopTimeout = time.Second

type demoConfig struct {
	Listen string
	// TokenLocks and Counters add to the demo's own patterns.
	TokenLocks    listFlag
	Counters      listFlag
	DeadlineLocks listFlag
	// Cluster runs the demo on a private 3-master Redis Cluster.
	Cluster bool
	History historyFlags // --history-* (historyflags.go)
}

func parseDemoFlags(args []string, getenv func(string) string, stderr io.Writer) (demoConfig, error) {
	var cfg demoConfig
	fs := flag.NewFlagSet("lockwarden demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Listen, "listen", defaultListen, "HTTP listen `address` (env LOCKWARDEN_LISTEN; 127.0.0.1:0 picks a free port)")
	fs.Var(&cfg.TokenLocks, "token-lock-pattern", tokenLockFlagUsage)
	fs.Var(&cfg.Counters, "counter", counterFlagUsage)
	fs.Var(&cfg.DeadlineLocks, "deadline-lock-pattern", deadlineLockFlagUsage)
	fs.BoolVar(&cfg.Cluster, "cluster", false, "run on a private 3-master Redis Cluster instead of one redis-server")
	histEnv := cfg.History.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return cfg, err
	}
	applyEnv(fs, map[string]string{"listen": "LOCKWARDEN_LISTEN",
		"token-lock-pattern": "LOCKWARDEN_TOKEN_LOCK_PATTERNS", "counter": "LOCKWARDEN_COUNTERS",
		"deadline-lock-pattern": "LOCKWARDEN_DEADLINE_LOCK_PATTERNS"}, getenv)
	applyEnv(fs, histEnv, getenv)
	if _, err := demoPatterns(cfg); err != nil {
		fmt.Fprintf(stderr, "lockwarden demo: %v\n", err)
		return cfg, errUsage
	}
	if _, err := cfg.History.settings(); err != nil {
		fmt.Fprintf(stderr, "lockwarden demo: %v\n", err)
		return cfg, errUsage
	}
	return cfg, nil
}

// trafficPatterns tells the console which of the demo's strings are token
// locks and counters: strings carry no marker of their own.
func trafficPatterns(prefix string) inspect.ObjectPatterns {
	return inspect.ObjectPatterns{
		TokenLocks:    []string{prefix + "demo:token:*"},
		Counters:      []inspect.CounterRule{{Pattern: prefix + "demo:hits:*", Limit: demoHitLimit, Window: demoHitWindow}},
		DeadlineLocks: []string{prefix + "demo:deadline:*"},
	}
}

// demoPatterns are the demo traffic's token lock and counter patterns plus
// any the operator added.
func demoPatterns(cfg demoConfig) (inspect.ObjectPatterns, error) {
	p, err := objectPatterns(cfg.TokenLocks, cfg.Counters, cfg.DeadlineLocks)
	if err != nil {
		return p, err
	}
	own := trafficPatterns("")
	p.TokenLocks = append(own.TokenLocks, p.TokenLocks...)
	p.Counters = append(own.Counters, p.Counters...)
	p.DeadlineLocks = append(own.DeadlineLocks, p.DeadlineLocks...)
	return p, p.Validate()
}

// runDemo starts a private redis-server, the console on it and demo
// traffic, and on ctx's end stops them in reverse order: traffic first (so
// workers release their locks while Redis is still there), then the
// console, then Redis. The redis-server child also dies with this process
// if it is killed outright (redisproc sets Pdeathsig).
func runDemo(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parseDemoFlags(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	log := newLogger(stderr)

	dr, err := startDemoRedis(cfg.Cluster, stdout)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer dr.Close()
	consoleRDB, trafficRDB := dr.console, dr.traffic

	patterns, _ := demoPatterns(cfg)  // checked by parseDemoFlags
	hist, _ := cfg.History.settings() // checked by parseDemoFlags
	con, err := openConsole(ctx, consoleConfig{
		Inspector: inspect.New(consoleRDB, &inspect.Options{Patterns: patterns}),
		Listen:    cfg.Listen,
		Match:     "*",
		Logger:    log,
		History:   hist,
	})
	if err != nil {
		return listenErr(cfg.Listen, err)
	}
	fmt.Fprintln(stdout, "lockwarden listening on", con.URL())

	tctx, stopTraffic := context.WithCancel(ctx)
	defer stopTraffic()
	trafficDone := make(chan error, 1)
	go func() {
		trafficDone <- runTraffic(tctx, trafficRDB, trafficConfig{Log: log})
	}()

	var runErr error
	select {
	case <-ctx.Done():
		log.Info("shutting down", "reason", context.Cause(ctx))
	case <-dr.exited:
		runErr = errors.New("demo: the private redis-server exited unexpectedly")
	case err := <-trafficDone:
		// Traffic only returns early when it could not set itself up.
		trafficDone <- err
		runErr = fmt.Errorf("demo traffic: %w", err)
	}

	deadline := time.Now().Add(closeTimeout)
	stopTraffic()
	select {
	case <-trafficDone:
	case <-time.After(trafficStopTimeout):
		log.Warn("demo traffic did not stop in time; stopping the rest anyway")
	}
	if err := closeBounded(con.Close, time.Until(deadline)); err != nil && runErr == nil {
		runErr = err
	}
	return runErr // deferred: clients closed, redis-server killed and its dir removed
}

// listenErr turns a taken port into advice; other errors pass unchanged.
// The port is recognised through any wrapping, and by text when a layer in
// between flattened the error.
func listenErr(listen string, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use") {
		return fmt.Errorf("cannot listen on %s: the address is already in use (another lockwarden?); pick another with --listen, e.g. --listen 127.0.0.1:0", listen)
	}
	return err
}

package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web"
)

// consoleConfig is the part of web.Config the binary decides; the tick and
// discovery periods keep web's defaults.
type consoleConfig struct {
	Inspector    *inspect.Inspector
	Listen       string
	Match        string
	AdminToken   string
	ViewerToken  string
	AllowedHosts []string
	// SessionIdle and SessionMaxAge: --session-idle, --session-max-age
	// (zero keeps web's defaults).
	SessionIdle, SessionMaxAge time.Duration
	Logger                     *slog.Logger
	Alerts                     web.AlertConfig
	MetricsMatch               string
	MetricsTop                 int
	// Discovery is serve's discovery flags; zero keeps web's defaults.
	Discovery discoverySettings
	// History is the --history-* flags; zero keeps web's defaults.
	History historySettings
}

// console is the part of web.Server the binary drives.
type console interface {
	URL() string
	Close() error
}

// openConsole starts the web console in the background; its sampling and
// event subscription stop when ctx ends, and Close releases the rest.
func openConsole(ctx context.Context, cfg consoleConfig) (console, error) {
	wcfg := web.Config{
		Inspector:     cfg.Inspector,
		Listen:        cfg.Listen,
		Match:         cfg.Match,
		AdminToken:    cfg.AdminToken,
		ViewerToken:   cfg.ViewerToken,
		AllowedHosts:  cfg.AllowedHosts,
		SessionIdle:   cfg.SessionIdle,
		SessionMaxAge: cfg.SessionMaxAge,
		Logger:        cfg.Logger,
		Alerts:        cfg.Alerts,
		MetricsMatch:  cfg.MetricsMatch,
		MetricsTop:    cfg.MetricsTop,
	}
	cfg.Discovery.apply(&wcfg)
	cfg.History.apply(&wcfg)
	srv := web.New(wcfg)
	if err := srv.Open(ctx); err != nil {
		return nil, err
	}
	return srv, nil
}

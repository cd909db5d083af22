// Command lockwarden is the live console for the distributed locks and rate
// limiters that applications keep in Redis.
//
//	lockwarden serve [flags]   console for an existing Redis
//	lockwarden demo  [flags]   private Redis + console + generated traffic
//	lockwarden locks|limiters|why|deadlocks|unlock|release-all|edit|top
//	                           the terminal's commands, clients of a running console
//	lockwarden version
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/lockwarden/lockwarden/cmd/lockwarden/internal/consoleclient"
	"github.com/lockwarden/lockwarden/cmd/lockwarden/internal/verbs"
)

// Exit codes: 1 for a failure at run time, 2 for a usage mistake (the
// convention of the go tool and of package flag).
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// errUsage marks errors already explained by a usage message.
var errUsage = errors.New("usage")

var usageText = `lockwarden - live console for Redis locks and rate limiters

Usage:
  lockwarden serve [--redis URL] [--listen ADDR] [--match GLOB]
                   [--admin-token TOKEN] [--viewer-token TOKEN] [--allowed-host NAMES]
                   [--session-idle DURATION] [--session-max-age DURATION]
                   [--token-lock-pattern GLOB]... [--counter GLOB=LIMIT/WINDOW]...
                   [--alert-webhook URL] [--alert-RULE DURATION|off]... [--alert-reject-ratio RATIO]
                   [--metrics-match GLOB] [--metrics-top N]
                   [--history-retention FINE,COARSE] [--history-top N]
  lockwarden demo  [--listen ADDR] [--token-lock-pattern GLOB]... [--counter GLOB=LIMIT/WINDOW]...
                   [--history-retention FINE,COARSE] [--history-top N]
` + verbUsage() + `  lockwarden version
  lockwarden help

Commands:
  serve    console for the locks and limiters in an existing Redis
  demo     start a private redis-server, the console and demo traffic;
           Ctrl-C stops all of it
  version  print the version
` + verbSummaries() + `
Environment (flags win):
  LOCKWARDEN_REDIS_URL      default for --redis (redis:// or rediss://, user and password allowed)
  LOCKWARDEN_LISTEN         default for --listen
  LOCKWARDEN_ADMIN_TOKEN    default for --admin-token
  LOCKWARDEN_VIEWER_TOKEN   default for --viewer-token
  LOCKWARDEN_ALLOWED_HOSTS  default for --allowed-host
  LOCKWARDEN_SESSION_IDLE, LOCKWARDEN_SESSION_MAX_AGE  defaults for --session-idle, --session-max-age
  LOCKWARDEN_TOKEN_LOCK_PATTERNS  default for --token-lock-pattern (comma-separated)
  LOCKWARDEN_COUNTERS       default for --counter (comma-separated)
  LOCKWARDEN_HISTORY_RETENTION, LOCKWARDEN_HISTORY_TOP  defaults for --history-retention, --history-top
  LOCKWARDEN_CONSOLE        default for --console of the terminal commands (` + consoleclient.DefaultURL + `)
  LOCKWARDEN_TOKEN          default for --token of the terminal commands

Token locks (SET NX PX) and access counters (INCR+EXPIRE) are plain strings,
so only keys matching --token-lock-pattern or --counter are shown as such.

Access: on a loopback --listen with no tokens everyone who can connect is an
admin (local mode). Any other --listen needs --admin-token; browsers then
sign in on /login, API clients send 'Authorization: Bearer TOKEN'. Tokens
are at least 16 bytes: 'openssl rand -base64 32' makes a good one.

Run 'lockwarden <command> -h' for the flags of one command.
`

func main() {
	// The first SIGINT/SIGTERM asks for a graceful stop; once it has been
	// seen, stop() restores the default so a second Ctrl-C kills at once.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	stdin = os.Stdin
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one command line and returns the process exit code. Errors
// are reported as one line on stderr; stdout gets only what a script might
// want to read (the listening URL, the version).
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText)
		return exitUsage
	}
	var err error
	switch args[0] {
	case "serve":
		err = runServe(ctx, args[1:], getenv, stdout, stderr)
	case "demo":
		err = runDemo(ctx, args[1:], getenv, stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, "lockwarden", version())
		return exitOK
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usageText)
		return exitOK
	default:
		if verbs.Is(args[0]) {
			err = verbs.Run(ctx, args[0], args[1:], verbs.IO{Stdin: stdin, Stdout: stdout, Stderr: stderr, Getenv: getenv})
			break
		}
		fmt.Fprintf(stderr, "lockwarden: unknown command %q\n\n%s", args[0], usageText)
		return exitUsage
	}
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errUsage), errors.Is(err, verbs.ErrUsage):
		return exitUsage
	default:
		fmt.Fprintln(stderr, "lockwarden:", err)
		return exitFail
	}
}

// stdin is what the terminal commands read answers from (edit's
// confirmation, top's keys); tests leave it nil.
var stdin io.Reader

// verbUsage is the usage lines of the terminal commands.
func verbUsage() string {
	var b strings.Builder
	for _, name := range verbs.Names {
		usage, _ := verbs.Summary(name)
		fmt.Fprintf(&b, "  %s\n", usage)
	}
	return b.String()
}

// verbSummaries says what each terminal command does.
func verbSummaries() string {
	var b strings.Builder
	b.WriteString("\nFrom a terminal, as clients of a running console (--console URL, --token TOKEN;\n" +
		"--json prints the console's JSON; each reads nothing from Redis itself):\n")
	for _, name := range verbs.Names {
		_, summary := verbs.Summary(name)
		fmt.Fprintf(&b, "  %-11s %s\n", name, summary)
	}
	return b.String()
}

// version reports the module version stamped by `go install`, or the VCS
// revision of a local build.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "(devel)"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return "(devel " + rev + ")"
}

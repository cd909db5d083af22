// Package verbs is the terminal's side of a running console: `lockwarden
// locks`, `limiters`, `why`, `unlock`, `release-all`, `edit`, `deadlocks`
// and `top`, each a client of the console's API (consoleclient), never a
// reader of Redis, so the console's roles, --match and audit trail apply.
package verbs

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/charmbracelet/x/term"

	"github.com/lockwarden/lockwarden/cmd/lockwarden/internal/consoleclient"
)

// ErrUsage marks a mistake on the command line, already explained on
// stderr with the verb's flags.
var ErrUsage = errors.New("verbs: usage")

// The environment variables the verbs read when a flag is absent.
const (
	EnvConsole = "LOCKWARDEN_CONSOLE"
	EnvToken   = "LOCKWARDEN_TOKEN"
)

// IO is where a verb reads and writes: the process's streams, or a test's.
type IO struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
}

// verb is one command: what it takes, and what it does once its flags
// are parsed.
type verb struct {
	args     string // the positional arguments
	synopsis string // the usage line after them: the verb's flags
	summary  string
	nargs    int
	// flags adds the verb's own flags to fs (the common ones are added
	// for every verb).
	flags func(fs *flag.FlagSet, o *opts)
	run   func(ctx context.Context, c *consoleclient.Client, o *opts, io IO) error
}

// opts are every verb's flags; each verb reads the ones it registered.
type opts struct {
	console, token string
	json           bool
	match, sort, q string
	holder, reason string
	rate           float64
	interval       string
	keepState, yes bool
	admin          bool
	args           []string
}

// verbs are the commands in the order `lockwarden help` lists them.
var verbs = map[string]verb{
	"locks": {"", "[--match GLOB] [--sort COLUMN] [-q TEXT]",
		"the locks the console sees: who holds them, leases, waiters", 0, listFlags(lockSorts), runLocks},
	"limiters": {"", "[--match GLOB] [--sort COLUMN] [-q TEXT]",
		"the rate limiters: their rule, the last second admitted and rejected", 0, listFlags(limiterSorts), runLimiters},
	"why": {"NAME", "",
		"why a lock or limiter is as it is, in one paragraph, and the way out", 1, nil, runWhy},
	"deadlocks": {"", "",
		"wait-for cycles between holders, and which hold to break first", 0, nil, runDeadlocks},
	"unlock": {"NAME", "--holder ID --reason TEXT",
		"force-unlock NAME if the holder still holds it (admin)", 1, unlockFlags, runUnlock},
	"release-all": {"CLIENT", "--reason TEXT",
		"force-unlock every hold of a client id (admin)", 1, reasonFlag, runReleaseAll},
	"edit": {"LIMITER", "--rate N --interval DURATION --reason TEXT [--keep-state] [--yes]",
		"change a limiter's rate, after its what-if over the last hour (admin)", 1, editFlags, runEdit},
	"top": {"", "[--admin]",
		"a live full-screen view of locks, limiters, alerts and deadlocks", 0, topFlags, runTop},
}

// Names lists the verbs, in the order of the usage text.
var Names = []string{"locks", "limiters", "why", "deadlocks", "unlock", "release-all", "edit", "top"}

// Is says whether name is one of the verbs.
func Is(name string) bool { _, ok := verbs[name]; return ok }

// Summary is a verb's usage line and what it does, for `lockwarden help`.
func Summary(name string) (usage, summary string) {
	v := verbs[name]
	usage = strings.Join(slices.DeleteFunc([]string{"lockwarden", name, v.args, v.synopsis}, func(s string) bool { return s == "" }), " ")
	return usage, v.summary
}

// Run runs verb name with its arguments.
func Run(ctx context.Context, name string, args []string, io IO) error {
	v, ok := verbs[name]
	if !ok {
		return fmt.Errorf("unknown command %q", name)
	}
	var o opts
	fs := flag.NewFlagSet("lockwarden "+name, flag.ContinueOnError)
	fs.SetOutput(io.Stderr)
	fs.StringVar(&o.console, "console", consoleclient.DefaultURL, "`URL` of the running console (env "+EnvConsole+")")
	fs.StringVar(&o.token, "token", "", "admin or viewer `TOKEN` of the console, sent as 'Authorization: Bearer' (env "+EnvToken+"; the environment keeps it out of ps)")
	if name != "top" {
		fs.BoolVar(&o.json, "json", false, "print the console's JSON answer instead of a table")
	}
	if v.flags != nil {
		v.flags(fs, &o)
	}
	usage, _ := Summary(name)
	fs.Usage = func() {
		fmt.Fprintf(io.Stderr, "Usage: %s [--console URL] [--token TOKEN]\n\n%s: %s.\n"+
			"A client of a running console's API: it reads nothing from Redis itself.\n\nFlags:\n", usage, fs.Name(), v.summary)
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return ErrUsage
	}
	if len(pos) != v.nargs {
		fmt.Fprintf(io.Stderr, "%s: wants %d argument(s) (%s), got %d\n", fs.Name(), v.nargs, v.args, len(pos))
		fs.Usage()
		return ErrUsage
	}
	o.args = pos
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if !given["console"] && io.Getenv(EnvConsole) != "" {
		o.console = io.Getenv(EnvConsole)
	}
	if !given["token"] {
		o.token = io.Getenv(EnvToken)
	}
	c, err := consoleclient.New(o.console, o.token)
	if err != nil {
		fmt.Fprintf(io.Stderr, "%s: %v\n", fs.Name(), err)
		return ErrUsage
	}
	err = v.run(ctx, c, &o, io)
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(io.Stderr, "%s: %s\n", fs.Name(), ue)
		fs.Usage()
		return ErrUsage
	}
	return err
}

// parse parses flags wherever they stand among the positional arguments
// ("why NAME --json" as well as "why --json NAME"); after "--" everything
// is positional, for names that start with "-".
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, pos = args[:i], append(pos, args[i+1:]...)
	}
	var head []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return append(head, pos...), nil
		}
		head = append(head, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// usageError is a verb's refusal of its command line, found before it
// contacts the console; Run prints it with the verb's flags.
type usageError string

func (e usageError) Error() string { return string(e) }

// required refuses an empty flag value.
func required(name, value string) error {
	if strings.TrimSpace(value) == "" {
		return usageError("--" + name + " is required")
	}
	return nil
}

// width is the terminal's width when w is one; else $COLUMNS, else no
// limit (a pipe gets whole lines).
func width(w io.Writer, getenv func(string) string) int {
	if f, ok := w.(*os.File); ok && term.IsTerminal(f.Fd()) {
		if cols, _, err := term.GetSize(f.Fd()); err == nil && cols > 0 {
			return cols
		}
	}
	if n, err := strconv.Atoi(getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return 0
}

package verbs

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/x/term"

	"github.com/lockwarden/lockwarden/cmd/lockwarden/internal/consoleclient"
	"github.com/lockwarden/lockwarden/cmd/lockwarden/internal/present"
	"github.com/lockwarden/lockwarden/views/words"
)

func reasonFlag(fs *flag.FlagSet, o *opts) {
	fs.StringVar(&o.reason, "reason", "", "why, in words (`TEXT`): the audit trail keeps it (required)")
}

func unlockFlags(fs *flag.FlagSet, o *opts) {
	fs.StringVar(&o.holder, "holder", "", "the holder `ID` you saw hold the lock (`lockwarden why NAME` names it); nothing happens if another holds it now (required)")
	reasonFlag(fs, o)
}

func editFlags(fs *flag.FlagSet, o *opts) {
	fs.Float64Var(&o.rate, "rate", 0, "permits per interval; a token bucket's capacity, its largest burst (required)")
	fs.StringVar(&o.interval, "interval", "", "the interval as a `duration`: 1s, 100ms, 1m; a token bucket's refill, the time one permit takes to come back (required)")
	fs.BoolVar(&o.keepState, "keep-state", false, "Redisson rate limiters: keep the permits granted so far (its setRate restarts them)")
	fs.BoolVar(&o.yes, "yes", false, "apply without asking, after printing the what-if")
	reasonFlag(fs, o)
}

func runWhy(ctx context.Context, c *consoleclient.Client, o *opts, io IO) error {
	w, raw, err := c.Why(ctx, o.args[0])
	if err != nil {
		return err
	}
	if o.json {
		return printRaw(io, raw)
	}
	head := fmt.Sprintf("%s (%s): %s", w.Name, w.Kind, w.State)
	_, err = fmt.Fprint(io.Stdout, present.WhyText(head, w.Answer, w.Facts, w.Actions, width(io.Stdout, io.Getenv)))
	return err
}

func runUnlock(ctx context.Context, c *consoleclient.Client, o *opts, io IO) error {
	if err := required("holder", o.holder); err != nil {
		return err
	}
	if err := required("reason", o.reason); err != nil {
		return err
	}
	name := o.args[0]
	raw, err := c.ForceUnlock(ctx, name, o.holder, o.reason)
	if err != nil {
		return fmt.Errorf("force-unlock of %q: %w", name, err)
	}
	if o.json {
		return printRaw(io, raw)
	}
	_, err = fmt.Fprintf(io.Stdout, "Force-unlocked %q: holder %s no longer holds it. The audit trail has your reason.\n", name, o.holder)
	return err
}

func runReleaseAll(ctx context.Context, c *consoleclient.Client, o *opts, io IO) error {
	if err := required("reason", o.reason); err != nil {
		return err
	}
	id := o.args[0]
	rs, raw, err := c.ReleaseAll(ctx, id, o.reason)
	if err != nil {
		return fmt.Errorf("release-all of client %s: %w", id, err)
	}
	if o.json {
		return printRaw(io, raw)
	}
	if len(rs) == 0 {
		_, err := fmt.Fprintf(io.Stdout, "Client %s holds nothing the console sees; nothing was released.\n", id)
		return err
	}
	rows := make([][]string, 0, len(rs))
	released := 0
	for _, r := range rs {
		res := "released"
		if r.Released {
			released++
		} else {
			res = "not released: " + r.Error
		}
		rows = append(rows, []string{r.Lock, res, r.Holder})
	}
	cols := []present.Column{{Title: "LOCK", Shrink: true, Min: 10}, {Title: "RESULT", Shrink: true, Min: 10}, {Title: "HOLDER", Shrink: true, Min: 10}}
	if err := present.Table(io.Stdout, cols, rows, width(io.Stdout, io.Getenv)); err != nil {
		return err
	}
	_, err = fmt.Fprintf(io.Stdout, "%d of %d holds released; each is in the audit trail with your reason.\n", released, len(rs))
	return err
}

func runEdit(ctx context.Context, c *consoleclient.Client, o *opts, io IO) error {
	if o.rate <= 0 {
		return usageError("--rate is required and must be above 0")
	}
	if err := required("interval", o.interval); err != nil {
		return err
	}
	if err := required("reason", o.reason); err != nil {
		return err
	}
	iv, err := time.ParseDuration(o.interval)
	if err != nil || iv <= 0 {
		return usageError(fmt.Sprintf("--interval %q is not a positive duration such as 1s, 100ms or 1m", o.interval))
	}
	name := o.args[0]
	rate := consoleclient.Rate{Rate: o.rate, IntervalMS: float64(iv) / float64(time.Millisecond)}
	cur, _, err := c.Limiter(ctx, name)
	if err != nil {
		return err
	}
	rule := proposedRule(*cur, rate)
	wi, wraw, err := c.WhatIf(ctx, name, rate)
	// A what-if the console cannot give (no history kept, a per-client
	// limiter) leaves the decision to the admin; any other failure (no
	// such limiter, a refused token, a bad rate) is the edit's too.
	if err != nil && !consoleclient.IsStatus(err, 422) && !isNoHistory(err) {
		return fmt.Errorf("what-if for %q at %s: %w", name, rule, err)
	}
	// Messages for the person go to stderr, so --json's stdout stays JSON.
	if err != nil {
		fmt.Fprintf(io.Stderr, "No what-if for %s: %v\n", name, err)
	} else {
		fmt.Fprintln(io.Stderr, WhatIfText(name, rule, *wi))
	}
	if !o.yes && !confirm(io, fmt.Sprintf("Change %s from %s to %s? [y/N] ", name, Rule(*cur), rule)) {
		return fmt.Errorf("not confirmed: %s was not changed (--yes applies without asking)", name)
	}
	l, raw, err := c.ModifyLimiter(ctx, name, consoleclient.LimiterEdit{Rate: rate, KeepState: o.keepState, Reason: o.reason})
	if err != nil {
		return fmt.Errorf("edit of %q: %w", name, err)
	}
	if o.json {
		var out = map[string]any{"limiter": json.RawMessage(raw)}
		if wraw != nil && wi != nil {
			out["what_if"] = json.RawMessage(wraw)
		}
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(io.Stdout, "%s\n", b)
		return err
	}
	_, err = fmt.Fprintf(io.Stdout, "%s now admits %s.\n", name, Rule(*l))
	return err
}

// proposedRule is the rule l would have at r, in Rule's words: a token
// bucket's rate is its burst and its interval the time one permit takes
// to come back; other limiters admit rate per interval.
func proposedRule(l consoleclient.Limiter, r consoleclient.Rate) string {
	perSecond := r.Rate * 1000 / r.IntervalMS
	if l.Kind == "token-bucket" {
		perSecond = 1000 / r.IntervalMS
	}
	return present.Rule(l.Kind, int64(r.Rate), r.IntervalMS, perSecond, 0, false)
}

// isNoHistory: the console keeps no history (--history-top 0), so there
// is nothing to replay.
func isNoHistory(err error) bool {
	ae, ok := err.(*consoleclient.APIError)
	return ok && ae.Status == 404 && strings.Contains(ae.Message, "no history")
}

// WhatIfText says what the proposed rule would have done to the demand
// the history recorded.
func WhatIfText(name, rule string, w consoleclient.WhatIf) string {
	if w.Attempts == 0 {
		return fmt.Sprintf("What if %s admitted %s? It recorded no demand in the last hour to replay.", name, rule)
	}
	s := fmt.Sprintf("What if %s admitted %s? Over the last %s, %s attempts:\n"+
		"  as it was:  %s admitted, %s rejected (%s)\n"+
		"  at the new: %s admitted, %s rejected (%s)",
		name, rule, words.Duration(int64(w.SpanS*1000)), words.Count(w.Attempts),
		words.Count(w.Actual.Admitted), words.Count(w.Actual.Rejected), present.Percent(w.Actual.Rejected, w.Attempts),
		words.Count(w.Predicted.Admitted), words.Count(w.Predicted.Rejected), present.Percent(w.Predicted.Rejected, w.Attempts))
	if w.LowerBound {
		s += "\n  (its rejections are not recorded, so only the demand it admitted was replayed)"
	}
	return s
}

// confirm asks on stderr and reads one answer from stdin; anything but
// yes, and no answer at all (a script's closed stdin), is no.
func confirm(io IO, prompt string) bool {
	fmt.Fprint(io.Stderr, prompt)
	if io.Stdin == nil {
		return false
	}
	line, _ := bufio.NewReader(io.Stdin).ReadString('\n')
	if f, ok := io.Stdin.(*os.File); !ok || !term.IsTerminal(f.Fd()) {
		fmt.Fprintln(io.Stderr) // a terminal echoed the answer and its newline
	}
	return slices.Contains([]string{"y", "yes"}, strings.ToLower(strings.TrimSpace(line)))
}

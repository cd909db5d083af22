package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/redistest"
)

// An operator finds the per-IP counters of one --counter pattern as one
// family, sees the IP hammering the limit at the top of its offenders,
// and resets that IP's counter from the family's page.
func TestJourneyFamilyTopOffenderReset(t *testing.T) {
	j := newJourneyWith(t, "--counter", "hits:*=10/1m")
	rdb, ctx := j.rdb, j.ctx
	pipe := rdb.Pipeline()
	for i := range 2000 {
		pipe.Set(ctx, "hits:198.51."+strconv.Itoa(i/256)+"."+strconv.Itoa(i%256), 1+i%4, time.Minute)
	}
	// A hand-written INCR+EXPIRE limiter's key, 42 hits on a limit of 10.
	const hot = "hits:203.0.113.9"
	for range 42 {
		pipe.Incr(ctx, hot)
	}
	pipe.Expire(ctx, hot, time.Minute)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	redistest.EventuallyWithin(t, 20*time.Second, "the family with the hot IP on top", func() bool {
		var body struct {
			Families []struct {
				Keys int64
				Hour struct {
					MostRejected []struct{ Key string } `json:"most_rejected"`
				}
			}
		}
		j.apiJSON("/api/families", &body)
		return len(body.Families) == 1 && body.Families[0].Keys == 2001 &&
			len(body.Families[0].Hour.MostRejected) > 0 && body.Families[0].Hour.MostRejected[0].Key == hot
	})

	j.open("/limiters")
	if n := j.count(`[data-testid=limiter-row]`); n != 0 {
		t.Errorf("the limiters list has %d rows; the counters are one family", n)
	}
	j.clickTo(`[data-testid=families-link]`)
	row := `[data-testid=family-row][data-family="hits:*"]`
	if got := j.words(row + ` [data-testid=family-keys]`); got != "2001" {
		t.Errorf("family keys shown %q, want 2001", got)
	}
	if got := j.words(row + ` [data-testid=family-top]`); got != hot+" (32)" {
		t.Errorf("family's top offender shown %q", got)
	}
	j.clickTo(row + ` [data-testid=family-link]`)
	top := `[data-testid=family-span-hour] [data-testid=most-rejected] [data-testid=offender]`
	if got := j.words(top + ` [data-testid=offender-id]`); !strings.HasPrefix(got, hot) {
		t.Fatalf("hour's most rejected shown %q, want %s first", got, hot)
	}
	if got := j.words(`[data-testid=family-span-minute] [data-testid=nearest-limit] [data-testid=offender] [data-testid=offender-fill]`); !strings.HasPrefix(got, "420 %") {
		t.Errorf("nearest the limit shown %q, want 420 %% first", got)
	}

	j.clickTo(top + `[data-key="` + hot + `"] [data-testid=offender-reset]`)
	if got := j.text(`[data-testid=flash]`); !strings.Contains(got, hot) || !strings.Contains(got, "reset") {
		t.Errorf("flash after the reset = %q", got)
	}
	if p := j.pathOf(); p != "/families/hits:%2A" {
		t.Errorf("after the reset the browser is on %s", p)
	}
	if rdb.Exists(ctx, hot).Val() != 0 {
		t.Fatal("the hot IP's counter still exists")
	}
	if n := rdb.Exists(ctx, "hits:198.51.0.1", "hits:198.51.7.207").Val(); n != 2 {
		t.Error("the reset deleted other members of the family")
	}
	var audit struct {
		Records []struct{ Action, Target, Outcome string }
	}
	j.apiJSON("/api/audit", &audit)
	found := false
	for _, r := range audit.Records {
		found = found || (r.Action == "reset" && r.Target == hot && r.Outcome == "ok")
	}
	if !found {
		t.Errorf("no audited reset of %s in %+v", hot, audit.Records)
	}
}

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// newClusterJourney is newJourney over a private Redis Cluster: the real
// binary given the Cluster's URL, the test's applications on a Cluster
// client.
func newClusterJourney(t *testing.T, opts *redistest.ClusterOptions) (*journey, *redistest.Cluster, *redis.ClusterClient) {
	t.Helper()
	c := redistest.StartCluster(t, opts)
	cc := redistest.NewClusterClient(t, c)
	j := &journey{t: t, ctx: ctxT(t), redis: c.Masters[0], rdb: redistest.NewClusterBackedClient(t, c, cc)}
	j.con = startConsole(t, c.URL())
	j.tab = openTab(t)
	j.allowFaviconIfMissing()
	return j, c, cc
}

// masterOf is the address of the master holding key's slot.
func masterOf(t *testing.T, cc *redis.ClusterClient, key string) string {
	t.Helper()
	n, err := cc.MasterForKey(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	return n.Options().Addr
}

// Journey C1: on a Cluster an engineer sees the locks of every master on
// one page (names with and without hash tags), opens one on another master
// than the first and force-unlocks it, which wakes the application waiting
// for it; the events page shows the force-unlock.
func TestJourneyClusterLocksOnEveryMaster(t *testing.T) {
	j, c, cc := newClusterJourney(t, nil)
	app := store.New(cc, nil)
	masters := map[string]string{} // master -> a lock name on it
	var names []string
	for i := 0; len(masters) < len(c.Masters); i++ {
		name := fmt.Sprintf("billing:lock:%d", i)
		if i%2 == 1 {
			name = fmt.Sprintf("{tenant-%d}:lock", i)
		}
		m := masterOf(t, cc, name)
		if _, ok := masters[m]; ok {
			continue
		}
		masters[m] = name
		names = append(names, name)
		j.wrote(name, "locks")
		l := app.NewLock(name, &store.LockOptions{Owner: fmt.Sprintf("holder-%d", i), Lease: time.Minute, NoWatchdog: true})
		if err := l.TryLock(j.ctx); err != nil {
			t.Fatal(err)
		}
	}
	target := masters[c.Masters[len(c.Masters)-1].Addr]
	if target == "" {
		t.Fatal("no lock on the last master")
	}
	holder := store.New(cc, nil) // a second application process waits
	waiter := holder.NewLock(target, &store.LockOptions{Owner: "next-in-line", RetryInterval: time.Minute})
	got := make(chan error, 1)
	go func() { got <- waiter.Lock(j.ctx) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(j.ctx), 2*time.Second)
		defer cancel()
		waiter.Unlock(ctx)
	})
	redistest.EventuallyWithin(t, 10*time.Second, "the waiter's first attempt to be rejected", func() bool {
		return j.lockAttempts(target).Rejected >= 1
	})

	j.open("/locks")
	for _, n := range names {
		j.waitText("the lock "+n+" listed", `[data-testid=lock-row][data-lock="`+n+`"] [data-testid=lock-link]`, 10*time.Second,
			func(s string) bool { return s != "" })
	}
	j.checkRedisShownUp()
	if n := j.count(`[data-testid=nodes-down]`); n != 0 {
		t.Errorf("a nodes-down banner with every master up")
	}
	row := `[data-testid=lock-row][data-lock="` + target + `"]`
	j.clickTo(row + ` [data-testid=lock-link]`)
	j.clickTo(`[data-testid=holder-row] [data-testid=force-unlock-button]`)
	j.fill(`[data-testid=force-unlock-reason]`, "e2e on a Cluster: holder is gone")
	if resp := j.clickTo(`[data-testid=force-unlock-confirm]`); resp.Status() != 200 {
		t.Fatalf("confirm: %d", resp.Status())
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("waiter: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not take the lock within 10 s of the force-unlock")
	}
	j.clickTo(`[data-testid=nav-events]`)
	ev := `[data-testid=event-row][data-event-type="force-unlock"]`
	if j.count(ev) != 1 || j.text(ev+` [data-testid=event-name]`) != target {
		t.Errorf("events page: %d force-unlock rows, want one for %s", j.count(ev), target)
	}
}

// Journey C2: a master of a Cluster (with a replica each) dies. The pages
// name it in a banner while the other masters' locks stay listed; once the
// replica has taken over, the banner is gone without restarting anything.
func TestJourneyClusterNodeDownBanner(t *testing.T) {
	j, c, cc := newClusterJourney(t, &redistest.ClusterOptions{ReplicasPerMaster: 1})
	victim := c.Masters[0].Addr
	var survivor string
	for i := 0; survivor == ""; i++ {
		n := fmt.Sprintf("report:lock:%d", i)
		if masterOf(t, cc, n) != victim {
			survivor = n
		}
	}
	j.wrote(survivor, "locks")
	l := store.New(cc, nil).NewLock(survivor, &store.LockOptions{Owner: "reporter", Lease: time.Minute, NoWatchdog: true})
	if err := l.TryLock(j.ctx); err != nil {
		t.Fatal(err)
	}
	j.open("/locks")
	j.waitText("the survivor's lock listed", `[data-testid=lock-row][data-lock="`+survivor+`"] [data-testid=lock-link]`, 10*time.Second,
		func(s string) bool { return s != "" })

	c.Masters[0].Stop()
	// Until the replica takes over, the sampler's reads that touch the dead
	// master fail: the overview may also say its numbers are stale, so it
	// is opened without the journey's Redis-is-up check, and the overview
	// (which still reads Redis itself) may answer 503 in that window.
	j.allowStatus("/", 503)
	banner := `[data-testid=nodes-down]`
	redistest.EventuallyWithin(t, 15*time.Second, "a banner naming the dead master", func() bool {
		if _, err := j.tab.Goto(j.con.URL + "/"); err != nil {
			t.Fatal(err)
		}
		return j.count(banner) == 1 && strings.Contains(j.text(banner), victim)
	})
	redistest.EventuallyWithin(t, 30*time.Second, "the banner gone after the failover", func() bool {
		if _, err := j.tab.Goto(j.con.URL + "/"); err != nil {
			t.Fatal(err)
		}
		return j.count(banner) == 0 && j.count(`[data-testid=redis-down]:visible`) == 0
	})
	j.open("/locks")
	j.waitText("the survivor's lock still listed", `[data-testid=lock-row][data-lock="`+survivor+`"] [data-testid=lock-link]`, 10*time.Second,
		func(s string) bool { return s != "" })
}

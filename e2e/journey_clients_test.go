package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// Journey: a service registered as orders-api crashes while holding two
// locks; the admin finds it on the Clients page, sees what it holds and who
// it is, and releases everything it held with a reason. A Redisson holder
// on another lock shows as unregistered and is not touched.
func TestJourneyClientsReleaseAll(t *testing.T) {
	j := newJourney(t)
	app := store.New(j.rdb, &store.Options{App: "orders-api", Version: "v1.4.2"})
	t.Cleanup(func() { _ = app.Close() })
	a, b := "orders:lock:1", "orders:lock:2"
	j.holdLock(app, a, "77")
	j.holdLock(app, b, "77")
	const foreign = "payments:lock:settle"
	j.redissonLock(foreign, javaHolder, 1, 50*time.Second)

	// The sampler reads the registry once a second: wait for the console
	// to know the client before the pages are rendered.
	redistest.EventuallyWithin(t, 15*time.Second, "the console to list the client's holds", func() bool {
		var body struct {
			Clients []struct {
				ID    string
				App   string
				Holds []struct{ Lock string }
			}
		}
		j.apiJSON("/api/clients", &body)
		for _, c := range body.Clients {
			if c.ID == app.ID() && c.App == "orders-api" && len(c.Holds) == 2 {
				return true
			}
		}
		return false
	})

	j.open("/locks")
	row := `[data-testid=lock-row][data-lock="` + a + `"]`
	if who := j.text(row + ` [data-testid=lock-holders-who]`); !strings.HasPrefix(who, "orders-api on ") || !strings.Contains(who, "owner 77, held ") {
		t.Errorf("lock list says %q about the holder", who)
	}
	frow := `[data-testid=lock-row][data-lock="` + foreign + `"]`
	if who := j.text(frow + ` [data-testid=lock-holders-who]`); !strings.HasPrefix(who, "unregistered client 5f1c9d2e-8b7a-4c3d-9e0f-1a2b3c4d5e6f (Redisson or other), owner 73") {
		t.Errorf("lock list says %q about the Redisson holder", who)
	}

	j.open("/clients")
	crow := `[data-testid=client-row][data-client="` + app.ID() + `"]`
	if title := j.text(crow + ` [data-testid=client-title]`); !strings.HasPrefix(title, "orders-api on ") || !strings.HasSuffix(title, "v1.4.2") {
		t.Errorf("client title %q", title)
	}
	if n := j.count(crow + ` [data-testid=client-hold]`); n != 2 {
		t.Errorf("client shows %d holds, want 2", n)
	}
	jrow := `[data-testid=client-row][data-client="5f1c9d2e-8b7a-4c3d-9e0f-1a2b3c4d5e6f"]`
	if title := j.text(jrow + ` [data-testid=client-title]`); !strings.HasPrefix(title, "unregistered client ") {
		t.Errorf("Redisson client title %q", title)
	}

	// The client is alive: the link to release it says so.
	if j.count(crow+` [data-testid=release-all-alive]`) != 1 {
		t.Error("no warning beside the release-all of a live client")
	}
	j.clickTo(crow + ` [data-testid=release-all-link]`)
	if title := j.text(`[data-testid=release-all-title]`); !strings.HasPrefix(title, "Release everything orders-api on ") {
		t.Errorf("confirmation title %q; want the client by name", title)
	}
	if n := j.count(`[data-testid=release-all-step]`); n != 2 {
		t.Errorf("the confirmation lists %d locks, want 2", n)
	}
	j.fill(`[data-testid=release-all-reason]`, "e2e: orders-api pod crashed")
	j.clickTo(`[data-testid=release-all-submit]`)
	if j.pathOf() != "/clients" || !strings.Contains(j.text(`[data-testid=flash]`), "2 of 2") {
		t.Fatalf("after the release-all: %s, flash %q", j.tab.URL(), j.text(`[data-testid=flash]`))
	}
	for _, name := range []string{a, b} {
		if j.rdb.Exists(j.ctx, name).Val() != 0 {
			t.Errorf("%s still held after release-all", name)
		}
	}
	if j.rdb.Exists(j.ctx, foreign).Val() != 1 {
		t.Error("the Redisson lock was released too")
	}

	var audit struct {
		Records []struct{ Action, Target, Reason, Outcome string }
	}
	j.apiJSON("/api/audit", &audit)
	unlocked := map[string]bool{}
	for _, r := range audit.Records {
		if r.Action == "force-unlock" && r.Outcome == "ok" && r.Reason == "e2e: orders-api pod crashed" {
			unlocked[r.Target] = true
		}
	}
	if !unlocked[a] || !unlocked[b] || len(unlocked) != 2 {
		t.Errorf("audit records a force-unlock for %v, want %s and %s", unlocked, a, b)
	}
}

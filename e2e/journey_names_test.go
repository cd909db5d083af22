package e2e

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"
)

// Names real applications use contain anything: markup, quotes, slashes,
// spaces, unicode, hash-tag braces, things that look like escapes.
var awkwardLocks = []string{
	`<script>alert("lock")</script>`,
	`quote"double'single`,
	`orders/2024/eu`,
	`with  two spaces `,
	`ünïcødé:锁:🔒`,
	`{tenant-7}:lock`,
	`a{}b}{c`,
	`100%41`,
	`q?x=1#frag`,
	`back\slash`,
	`&amp;&lt;b&gt;`,
}

var awkwardLimiters = []string{
	`<img src=x onerror=alert(1)>`,
	`rate/limit "eu"`,
	`限流 {x}`,
	`50%2F..%2F`,
}

// Journey 8: names that need escaping render as text, and their links open
// the right object.
func TestJourney8AwkwardNamesRenderAsText(t *testing.T) {
	j := newJourney(t)
	holders := map[string]string{}
	for i, name := range awkwardLocks {
		holders[name] = fmt.Sprintf("%s:%d", javaHolder[:36], 100+i)
		j.redissonLock(name, holders[name], 1, 2*time.Minute)
	}
	for _, name := range awkwardLimiters {
		j.bucket(name, 10, 100)
	}

	// As served: every name is in its row's data attribute and its link's
	// text, character for character.
	resp := j.open("/locks")
	for _, name := range awkwardLocks {
		if got := j.servedLink(resp, "lock-row", "lock", "lock-link", name); got != name {
			t.Errorf("served link text for %q is %q", name, got)
		}
	}
	// And once the script has redrawn the table from live frames.
	j.waitLive(8)
	j.checkNoInjection()
	for _, name := range awkwardLocks {
		if got := j.liveLinkText("lock-row", "lock", "lock-link", name); got != name {
			t.Errorf("live link text for %q is %q", name, got)
		}
	}

	// A lock that appears while the page is open is added by the script,
	// which must write the name as text too.
	const late = `<img src=x onerror=alert("late")> "/" {late}`
	j.redissonLock(late, javaHolder, 1, 2*time.Minute)
	j.waitJS("the script to add the new lock", `name => [...document.querySelectorAll("[data-testid=lock-row]")].some(r => r.dataset.lock === name)`, late, 10*time.Second)
	j.checkNoInjection()
	if got := j.liveLinkText("lock-row", "lock", "lock-link", late); got != late {
		t.Errorf("script-added link text is %q, want %q", got, late)
	}
	j.clickNamed("lock-row", "lock", "lock-link", late)
	if got := j.rawText(`[data-testid=lock-name]`); got != late {
		t.Errorf("script-added link of %q opened the page of %q", late, got)
	}

	// Every link opens the page of exactly that lock, as Redis has it.
	for _, name := range append(append([]string(nil), awkwardLocks...), late) {
		j.open("/locks")
		j.clickNamed("lock-row", "lock", "lock-link", name)
		if got := j.rawText(`[data-testid=lock-name]`); got != name {
			t.Errorf("link of %q opened the page of %q", name, got)
			continue
		}
		if p, _ := url.PathUnescape(j.pathOf()); p != "/locks/"+name {
			t.Errorf("link of %q led to path %q", name, j.pathOf())
		}
		h := j.hgetall(name)
		if got := j.text(`[data-testid=holder-row] [data-testid=holder-id]`); len(h) != 1 || h[got] != "1" {
			t.Errorf("page of %q shows holder %q; Redis has %v", name, got, h)
		}
		j.checkNoInjection()
	}

	// Limiters: the same on their list and pages.
	resp = j.open("/limiters")
	for _, name := range awkwardLimiters {
		if got := j.servedLink(resp, "limiter-row", "limiter", "limiter-link", name); got != name {
			t.Errorf("served limiter link text for %q is %q", name, got)
		}
	}
	j.checkNoInjection()
	for _, name := range awkwardLimiters {
		j.open("/limiters")
		j.clickNamed("limiter-row", "limiter", "limiter-link", name)
		if got := j.rawText(`[data-testid=limiter-name]`); got != name {
			t.Errorf("limiter link of %q opened the page of %q", name, got)
			continue
		}
		if got, want := j.text(`[data-testid=limiter-rate]`), j.hgetall(name)["max_permits"]; got != want {
			t.Errorf("page of %q shows rate %q; Redis has %q", name, got, want)
		}
		j.checkNoInjection()
	}

	// Breaking a lock whose name holds slashes goes to that lock and no other.
	const slashed = `orders/2024/eu`
	j.open("/locks/" + url.PathEscape(slashed))
	j.clickTo(`[data-testid=force-unlock-button]`)
	if got := j.rawText(`[data-testid=confirm-name]`); got != slashed {
		t.Fatalf("confirmation names %q", got)
	}
	j.fill(`[data-testid=force-unlock-reason]`, `breaking "orders/2024/eu" <b>now</b>`)
	j.clickTo(`[data-testid=force-unlock-confirm]`)
	if got := j.text(`[data-testid=flash]`); !strings.Contains(got, slashed) {
		t.Errorf("flash %q does not name %q", got, slashed)
	}
	if n, _ := j.rdb.Exists(j.ctx, slashed).Result(); n != 0 {
		t.Errorf("%q still exists after its force-unlock", slashed)
	}
	for _, name := range awkwardLocks {
		if name == slashed {
			continue
		}
		if n, _ := j.rdb.Exists(j.ctx, name).Result(); n != 1 {
			t.Errorf("%q vanished when %q was broken", name, slashed)
		}
	}
}

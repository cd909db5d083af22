package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"

	"github.com/lockwarden/lockwarden/store"
)

// wallProblemsJS measures the wall as the screen shows it and returns what
// a person across the room could not read, one line each:
//   - two pieces of text whose visible boxes overlap;
//   - text of a tile outside the tile's padding (a name cut with an
//     ellipsis counts by its element's box, whose overflow it hides);
//   - a number cut short (numbers are never truncated);
//   - a name split over lines, or cut without its whole text in a title;
//   - an alert whose text is not larger than the tiles' labels;
//   - visible text outside the screen.
//
// A text box is its Range's client rect cut to every ancestor that clips
// its overflow. Boxes overlap when they share more than 1 px across and
// more than a fifth of the shorter one's height: a font's glyph box is a
// little taller than a tight line, so lines stacked closely touch without
// their letters meeting.
const wallProblemsJS = `() => {
  const root = document.querySelector(".wall-root");
  const out = [];
  const name = el => (el.dataset.testid || el.className || el.tagName) + " " + JSON.stringify(el.textContent.trim().slice(0, 48));
  const clipOf = el => {
    let c = { l: 0, t: 0, r: innerWidth, b: innerHeight };
    for (let a = el; a && a !== document.documentElement; a = a.parentElement) {
      const cs = getComputedStyle(a);
      if (cs.overflowX !== "visible" || cs.overflowY !== "visible") {
        const b = a.getBoundingClientRect();
        c = { l: Math.max(c.l, b.left), t: Math.max(c.t, b.top), r: Math.min(c.r, b.right), b: Math.min(c.b, b.bottom) };
      }
    }
    return c;
  };
  const boxes = [];
  const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    const el = n.parentElement;
    if (!n.textContent.trim() || el.closest("[hidden]") || el.closest("svg")) continue;
    const cs = getComputedStyle(el);
    if (cs.visibility === "hidden" || cs.display === "none") continue;
    const range = document.createRange();
    range.selectNodeContents(n);
    const clip = clipOf(el);
    for (const r of range.getClientRects()) {
      const v = { l: Math.max(r.left, clip.l), t: Math.max(r.top, clip.t), r: Math.min(r.right, clip.r), b: Math.min(r.bottom, clip.b) };
      if (v.r - v.l >= 1 && v.b - v.t >= 1) boxes.push({ el, v, raw: r });
    }
  }
  if (boxes.length < 20) out.push("only " + boxes.length + " pieces of text on the wall");
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i], b = boxes[j];
      if (a.el === b.el) continue;
      const x = Math.min(a.v.r, b.v.r) - Math.max(a.v.l, b.v.l);
      const y = Math.min(a.v.b, b.v.b) - Math.max(a.v.t, b.v.t);
      if (x > 1 && y > 0.2 * Math.min(a.v.b - a.v.t, b.v.b - b.v.t)) out.push("overlap: " + name(a.el) + " and " + name(b.el));
    }
  }
  for (const tile of root.querySelectorAll(".tile")) {
    const b = tile.getBoundingClientRect(), cs = getComputedStyle(tile);
    const c = { l: b.left + parseFloat(cs.borderLeftWidth) + parseFloat(cs.paddingLeft), r: b.right - parseFloat(cs.borderRightWidth) - parseFloat(cs.paddingRight),
      t: b.top + parseFloat(cs.borderTopWidth) + parseFloat(cs.paddingTop), b: b.bottom - parseFloat(cs.borderBottomWidth) - parseFloat(cs.paddingBottom) };
    for (const x of boxes) {
      if (!tile.contains(x.el)) continue;
      const r = getComputedStyle(x.el).textOverflow === "ellipsis" ? x.el.getBoundingClientRect() : x.raw;
      const slack = 0.2 * r.height;
      if (r.left < c.l - 1 || r.right > c.r + 1 || r.top < c.t - slack || r.bottom > c.b + slack) {
        out.push("outside its tile's padding: " + name(x.el));
      }
    }
  }
  for (const el of root.querySelectorAll(".wall-big")) {
    if (!el.closest("[hidden]") && el.scrollWidth > el.clientWidth + 1) out.push("number cut: " + name(el));
  }
  for (const el of root.querySelectorAll("[data-testid=tile-name], [data-testid=wall-lock-name], .event-name, .thumb-name")) {
    const range = document.createRange();
    range.selectNodeContents(el);
    const tops = new Set(Array.from(range.getClientRects()).map(r => Math.round(r.top)));
    if (tops.size > 1) out.push("name split over lines: " + name(el));
    if (el.scrollWidth > el.clientWidth + 1 && el.title !== el.textContent) out.push("name cut without a title: " + name(el));
  }
  const label = document.querySelector(".tile-label");
  const labelPx = label ? parseFloat(getComputedStyle(label).fontSize) : 0;
  for (const a of root.querySelectorAll("[data-testid=alert]")) {
    const px = parseFloat(getComputedStyle(a).fontSize);
    if (px < 1.3 * labelPx || px < innerHeight / 54) out.push("alert text " + px + " px beside labels of " + labelPx + " px: " + name(a));
  }
  for (const x of boxes) {
    if (x.v.r > innerWidth + 1 || x.v.b > innerHeight + 1) out.push("off the screen: " + name(x.el));
  }
  return out;
}`

// Journey: the wall across a room, at 1920x1080 and at 3840x2160 (a 4K
// screen at 100 %). Limiters with long names and rejections (so ratios,
// and alerts, are on it), locks with long names: measured in the page, no
// text overlaps other text, none leaves its tile's padding or the screen,
// no number is cut, no name is split over lines or cut without a title,
// and alerts are larger than the tiles' labels. The same layout at both
// sizes: the 4K wall is the 1080p one, twice as large.
func TestJourneyWallReadable(t *testing.T) {
	srv, rdb := redisFor(t)
	j := &journey{t: t, ctx: ctxT(t), redis: srv, rdb: rdb}
	// Every held lock an alert: more alerts than the wall lists in full.
	j.con = startConsole(t, srv.URL(), "--token-lock-pattern", "job:*", "--alert-lock-no-expiry", "0s", "--alert-lock-held-too-long", "1s")
	j.tab = openTab(t)
	j.allowFaviconIfMissing()

	names := []string{"payments:checkout:eu-west-1:api-gateway-requests", "login", "search:autocomplete", "partner:acme-corporation-webhooks", "exports", "notifications:push:apns"}
	for i, n := range names {
		j.bucket(n, int64(5+i), 200)
	}
	for _, n := range names[:3] {
		l := j.limiterLoad(n, 3, 20*time.Millisecond)
		t.Cleanup(l.stop)
	}
	app := store.New(j.rdb, nil)
	for _, n := range []string{"orders:settlement:nightly-reconciliation-batch", "inventory:{warehouse-frankfurt-3}", "billing"} {
		j.holdLock(app, n, "worker-1")
	}
	if err := rdb.SetNX(j.ctx, "job:quarterly-revenue-report-export", "export-1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Del(j.ctx, "job:quarterly-revenue-report-export") })

	columns := map[string]bool{}
	for _, size := range []playwright.Size{{Width: 1920, Height: 1080}, {Width: 3840, Height: 2160}} {
		t.Run(fmt.Sprintf("%dx%d", size.Width, size.Height), func(t *testing.T) {
			if err := j.tab.SetViewportSize(size.Width, size.Height); err != nil {
				t.Fatal(err)
			}
			j.open("/wall")
			j.waitLive(3)
			j.waitJS("the alert and the rejections on the wall", `() => document.querySelectorAll("[data-testid=alert]").length > 0 &&
				Array.from(document.querySelectorAll("[data-testid=wall-tile] [data-testid=ratio]")).some(el => el.textContent.includes("%"))`, nil, 20*time.Second)
			// Frames change the numbers five times a second: measure a few.
			for range 3 {
				if got, _ := j.eval(wallProblemsJS, nil).([]any); len(got) > 0 {
					var lines []string
					for _, p := range got {
						lines = append(lines, fmt.Sprint(p))
					}
					j.tab.Screenshot(playwright.PageScreenshotOptions{Path: playwright.String(fmt.Sprintf("artifacts/wall-%dx%d.png", size.Width, size.Height))})
					t.Fatalf("the wall at %dx%d is not readable:\n%s", size.Width, size.Height, strings.Join(lines, "\n"))
				}
				time.Sleep(400 * time.Millisecond)
			}
			// However many alerts fire, the tiles stay on the screen and
			// a line counts the alerts not listed.
			j.waitJS("the alerts not listed counted", `() => document.querySelector("[data-testid=alerts-more]") !== null`, nil, 20*time.Second)
			if off := j.eval(`() => Array.from(document.querySelectorAll("[data-testid=wall-tile]")).filter(t => t.getBoundingClientRect().bottom > innerHeight).length`, nil); fmt.Sprint(off) != "0" {
				t.Errorf("%v tiles below the screen", off)
			}
			// A long name is cut, whole in its title.
			tile := `[data-testid=wall-tile][data-limiter="` + names[0] + `"] [data-testid=tile-name]`
			if title, _ := j.tab.Locator(tile).GetAttribute("title"); title != names[0] {
				t.Errorf("the long name's title %q", title)
			}
			columns[fmt.Sprint(j.eval(`() => getComputedStyle(document.querySelector("[data-testid=wall-tiles]")).gridTemplateColumns.split(" ").length`, nil))] = true
		})
	}
	if len(columns) != 1 {
		t.Errorf("the tiles' columns differ between the sizes: %v", columns)
	}
}

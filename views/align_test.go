package views

import (
	"testing"

	"github.com/PuerkitoBio/goquery"
)

// A column of numbers is right-aligned, header and cells alike: a header
// left-aligned over right-aligned numbers reads as labelling the column
// beside it.
func TestViewNumberColumnsAlignTheirHeaders(t *testing.T) {
	for name, doc := range map[string]*goquery.Document{
		"locks":      render(t, Locks(LocksPage{Layout: layout(NavLocks), Locks: lockRows()})),
		"limiters":   render(t, Limiters(LimitersPage{Layout: layout(NavLimiters), Limiters: []LimiterRow{{Name: "x", Kind: "token-bucket"}}})),
		"lock waits": render(t, lockWaits([]WaitRow{{WindowS: 10, Acquired: 8, Contended: 2, P50MS: 15, P99MS: 30, MaxMS: 30}})),
	} {
		doc.Find("table").Each(func(_ int, table *goquery.Selection) {
			heads := table.Find("thead th")
			table.Find("tbody tr").First().Find("td").Each(func(i int, td *goquery.Selection) {
				if i >= heads.Length() {
					return
				}
				if th := heads.Eq(i); td.HasClass("num") != th.HasClass("num") {
					t.Errorf("%s: column %q: cells num=%v, header num=%v", name, th.Text(), td.HasClass("num"), th.HasClass("num"))
				}
			})
		})
	}
}

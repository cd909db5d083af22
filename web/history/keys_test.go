package history_test

import (
	"testing"

	"github.com/lockwarden/lockwarden/web/history"
)

// The history's keys keep the layout replicas and earlier versions wrote:
// a history kept in Redis outlives a console upgrade.
func TestKeyLayout(t *testing.T) {
	for got, want := range map[string]string{
		history.WriterLock:                  "lw:{lw-history}:writer",
		history.MetaKey:                     "lw:{lw-history}:meta",
		history.IndexKey:                    "lw:{lw-history}:index",
		history.FineKey("orders:42"):        "lw:{orders:42}:h10s:orders:42",
		history.CoarseKey("orders:42"):      "lw:{orders:42}:h1m:orders:42",
		history.HoldsKey("lock:{tenant}:7"): "lw:{tenant}:hholds:lock:{tenant}:7",
		history.OpenKey("lock:{tenant}:7"):  "lw:{tenant}:hopen:lock:{tenant}:7",
		history.WaitKey("job"):              "lw:{job}:hwait:job",
	} {
		if got != want {
			t.Errorf("key %q, want %q", got, want)
		}
	}
}

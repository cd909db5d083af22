package hashread

import (
	"errors"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
)

// hash_read.lua's reply: HLEN, PTTL (ms, or -2 / -1), Redis time, then the
// fields when it read them. A reply of another shape is an error, never a
// half-read hash.
func TestParse(t *testing.T) {
	h, err := parse([]any{int64(2), int64(1500), int64(7), "f", "1", "g", "2"})
	if err != nil || h.Size != 2 || h.PTTL != 1500*time.Millisecond || h.NowMS != 7 || len(h.Fields) != 2 || h.Fields["g"] != "2" {
		t.Fatalf("parse = %+v, %v", h, err)
	}
	if h, err := parse([]any{int64(-1), int64(-1), int64(7)}); err != nil || h.PTTL != -1 || h.Fields != nil {
		t.Fatalf("a key that is no hash = %+v, %v", h, err)
	}
	for _, bad := range [][]any{{int64(1)}, {int64(1), int64(2), int64(3), "f"}, {"1", int64(2), int64(3)}, {int64(1), int64(2), int64(3), "f", int64(4)}} {
		if _, err := parse(bad); err == nil {
			t.Errorf("parse(%v) took a reply of another shape", bad)
		}
	}
	big := Reply{Size: 65, Max: 64}
	if !big.TooLarge() || !errors.Is(big.WrongKind("lock", "x"), store.ErrWrongKind) || (Reply{Size: 64, Max: 64}).TooLarge() {
		t.Fatal("the bound is not the one read with")
	}
}

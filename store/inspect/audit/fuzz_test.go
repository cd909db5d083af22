package audit

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/lockwarden/lockwarden/store"
)

// Any ?before= a client sends to /api/audit: it is a stream entry id
// ("<ms>-<seq>", whole numbers) or a ValidationError naming the field, and
// the end of the read it gives is the id just below it, so a page neither
// repeats the record named nor skips the one before it.
func FuzzAuditBefore(f *testing.F) {
	for _, s := range []string{"1700000000000-0", "1700000000000-5", "0-0", "0-1", "1-0",
		"18446744073709551615-18446744073709551615", "18446744073709551616-0", "-", "1-", "-1", "+1-0", "1-2-3", "", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		end, err := idBefore(id)
		if err != nil {
			var ve *store.ValidationError
			if !errors.As(err, &ve) || ve.Field != "before" {
				t.Fatalf("idBefore(%q) = %v, want a ValidationError of field before", id, err)
			}
			return
		}
		ms, seq, ok := parseStreamID(id)
		if !ok || strings.ContainsAny(id, "+ \t") {
			t.Fatalf("idBefore took %q, which is no entry id", id)
		}
		if end == "" {
			if ms != 0 || seq != 0 {
				t.Fatalf("idBefore(%q) = \"\" (nothing older) for an id above 0-0", id)
			}
			return
		}
		ems, eseq, ok := parseStreamID(end)
		switch {
		case !ok:
			t.Fatalf("idBefore(%q) = %q, no entry id", id, end)
		case seq > 0 && (ems != ms || eseq != seq-1):
			t.Fatalf("idBefore(%q) = %q, want %d-%d", id, end, ms, seq-1)
		case seq == 0 && (ems != ms-1 || eseq != math.MaxUint64):
			t.Fatalf("idBefore(%q) = %q, want %d-%d", id, end, ms-1, uint64(math.MaxUint64))
		}
	})
}

// parseStreamID splits "<ms>-<seq>".
func parseStreamID(id string) (ms, seq uint64, ok bool) {
	a, b, found := strings.Cut(id, "-")
	ms, err1 := strconv.ParseUint(a, 10, 64)
	seq, err2 := strconv.ParseUint(b, 10, 64)
	return ms, seq, found && err1 == nil && err2 == nil
}

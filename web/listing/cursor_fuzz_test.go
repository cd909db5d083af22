package listing

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// Any ?cursor= a client sends: decoding never panics, and a cursor that
// decodes names a row and survives its own re-encoding. The cursor of any
// row (names are bytes, as Redis keys are: not always UTF-8) decodes to
// that row's key, and the page after a key is exactly the rows the order
// puts after it (never the cursor's own row), at most Limit of them, with
// a next cursor naming the last row sent when more follow.
func FuzzListCursor(f *testing.F) {
	rows := fuzzRows()
	for _, k := range []Key{rows[0], rows[7], {Name: "zz"}, {Num: -1e300, Str: "\x00", Name: "\xff"}, {Num: 0.5, Name: "l007"}} {
		f.Add(encodeCursor(k), k.Num, k.Str, k.Name, uint8(5), false)
		f.Add(encodeCursor(k), k.Num, k.Str, k.Name, uint8(50), true)
	}
	for _, s := range []string{"", "e30", "eyJrIjoiIn0", "eyJrIjoieCIsIngiOjF9", "eyJrIjoieCIsIm4iOiIxIn0",
		"eyJrIjoieCJ9eyJrIjoieSJ9", "eyJrIjoieCIsIm4iOjFlNDAwfQ", "!!!", "eyJrIjoieCJ9=", "bnVsbA"} {
		f.Add(s, 3.0, "1", "l010", uint8(10), false)
	}
	f.Fuzz(func(t *testing.T, cursor string, num float64, str, name string, limit uint8, desc bool) {
		if after, err := DecodeCursor(cursor); err == nil {
			if after.Name == "" || math.IsNaN(after.Num) || math.IsInf(after.Num, 0) {
				t.Fatalf("cursor %q decodes to %+v", cursor, *after)
			}
			again, err := DecodeCursor(encodeCursor(*after))
			if err != nil || *again != *after {
				t.Fatalf("cursor %q: %+v re-encoded decodes to %v, %v", cursor, *after, again, err)
			}
			checkPageAfter(t, rows, *after, limit, desc)
		}
		if name == "" || math.IsNaN(num) || math.IsInf(num, 0) {
			return // no row has such a key
		}
		k := Key{Num: num, Str: str, Name: name}
		if got, err := DecodeCursor(encodeCursor(k)); err != nil || *got != k {
			t.Fatalf("the cursor of row %+v decodes to %v, %v", k, got, err)
		}
		checkPageAfter(t, append(slices.Clone(rows), k), k, limit, desc)
	})
}

// checkPageAfter checks the page of rows after the key after.
func checkPageAfter(t *testing.T, rows []Key, after Key, limit uint8, desc bool) {
	t.Helper()
	q := Query{Desc: desc, Limit: max(1, int(limit)), After: &after}
	ks := make([]Keyed, len(rows))
	for i, k := range rows {
		ks[i] = Keyed{i, k}
	}
	dir := 1
	if desc {
		dir = -1
	}
	slices.SortFunc(ks, func(a, b Keyed) int { return dir * a.K.compare(b.K) })
	var want []Key
	for _, k := range ks {
		if dir*k.K.compare(after) > 0 && k.K.Name != after.Name {
			want = append(want, k.K)
		}
	}
	more := len(want) > q.Limit
	want = want[:min(len(want), q.Limit)]
	p := pageOf(rows, ks, q)
	if !slices.Equal(p.Rows, want) {
		t.Fatalf("after %+v (desc %v, limit %d): rows %v, want %v", after, desc, q.Limit, p.Rows, want)
	}
	if more != (p.Next != "") {
		t.Fatalf("after %+v: next %q with more rows %v", after, p.Next, more)
	}
	if p.Next != "" {
		if k, err := DecodeCursor(p.Next); err != nil || *k != want[len(want)-1] {
			t.Fatalf("next cursor %q decodes to %v, %v; want the last row %+v", p.Next, k, err, want[len(want)-1])
		}
	}
}

// fuzzRows are the rows of a list whose keys tie on Num and on Str in
// places, so a cursor's three parts all decide.
func fuzzRows() []Key {
	var out []Key
	for i := range 40 {
		out = append(out, Key{Num: float64(i % 7), Str: fmt.Sprint(i % 3), Name: fmt.Sprintf("l%03d", i)})
	}
	return append(out, Key{Num: math.MaxFloat64, Name: "max"}, Key{Num: -math.MaxFloat64, Name: "min"})
}

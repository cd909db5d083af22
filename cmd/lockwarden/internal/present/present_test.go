package present

import (
	"strings"
	"testing"
)

func TestFitShrinksNamesThenDropsColumns(t *testing.T) {
	cols := []Column{{Title: "NAME", Shrink: true, Min: 10}, {Title: "HOLDER", Shrink: true, Min: 6, Drop: 1}, {Title: "N"}}
	rows := [][]string{{"orders:checkout:42", "orders-api on host-7 (pid 4211)", "1,204"}}
	if ws := Fit(cols, rows, 0); ws[0] != 18 || ws[1] != 31 || ws[2] != 5 {
		t.Errorf("no limit: widths %v, want the widest cell of each", ws)
	}
	// 40 cells: the holder, furthest above its Min, gives first.
	if ws := Fit(cols, rows, 40); ws[0]+ws[1]+ws[2]+2*gap != 40 || ws[2] != 5 || ws[0] < 10 {
		t.Errorf("40 cells: widths %v; want 40 in all, numbers whole", ws)
	}
	// 20 cells: even at their Mins the columns do not fit; the holder goes.
	if ws := Fit(cols, rows, 20); ws[1] != 0 || ws[0] != 13 || ws[2] != 5 {
		t.Errorf("20 cells: widths %v; want the holder dropped and the name given the rest", ws)
	}
	var b strings.Builder
	if err := Table(&b, cols, rows, 20); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if w := len([]rune(line)); w > 20 {
			t.Errorf("line %q is %d cells, wider than 20", line, w)
		}
	}
}

func TestSparkKeepsATrickleAboveSilence(t *testing.T) {
	if got := Spark([]int64{0, 1, 1000, 500}, 3); got != "▂█▅" {
		t.Errorf("Spark = %q, want the last 3 scaled, 1 of 1000 above the lowest bar", got)
	}
}

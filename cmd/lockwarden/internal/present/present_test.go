package present

import (
	"strings"
	"testing"
)

func TestDurationInWords(t *testing.T) {
	for ms, want := range map[int64]string{
		-1: "–", 0: "0 ms", 850: "850 ms", 4_250: "4.2 s", 12_900: "12 s", 60_000: "1 min",
		192_000: "3 min 12 s", 7_500_000: "2 h 5 min", 277_200_000: "3 d 5 h",
	} {
		if got := Duration(ms); got != want {
			t.Errorf("Duration(%d) = %q, want %q", ms, got, want)
		}
	}
}

func TestNumberAsTheConsoleSaysIt(t *testing.T) {
	for f, want := range map[float64]string{1000: "1,000", 2.5: "2.5", 1234.567: "1,235", 0.333: "0.33"} {
		if got := Number(f); got != want {
			t.Errorf("Number(%v) = %q, want %q", f, got, want)
		}
	}
}

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

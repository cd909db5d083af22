package words

import "testing"

func TestDuration(t *testing.T) {
	for ms, want := range map[int64]string{
		-1: "–", 0: "0 ms", 850: "850 ms", 4_250: "4.2 s", 12_900: "12 s", 60_000: "1 min",
		61_000: "1 min 1 s", 7_500_000: "2 h 5 min", 277_200_000: "3 d 5 h",
	} {
		if got := Duration(ms); got != want {
			t.Errorf("Duration(%d) = %q, want %q", ms, got, want)
		}
	}
}

func TestCount(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1_204_000: "1,204,000", -1234: "-1,234"} {
		if got := Count(n); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestNumber(t *testing.T) {
	for f, want := range map[float64]string{1000: "1,000", 2.5: "2.5", 1234.567: "1,235", 0.333: "0.33", -150.4: "-150"} {
		if got := Number(f); got != want {
			t.Errorf("Number(%v) = %q, want %q", f, got, want)
		}
	}
}

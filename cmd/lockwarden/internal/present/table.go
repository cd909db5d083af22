package present

import (
	"io"
	"slices"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// Column is one column of a table.
type Column struct {
	Title string
	// Shrink lets the column give up width when the table is wider than
	// the terminal, down to Min cells; names and holders shrink, numbers
	// never do (a cut number is a wrong number).
	Shrink bool
	Min    int
	// Right aligns the column's cells to the right (numbers).
	Right bool
	// Width is the least the column takes, so a live table's columns do
	// not jump as its numbers grow and shrink.
	Width int
	// Drop lets the column go when the table does not fit even with every
	// column shrunk: the highest Drop goes first; 0 never goes.
	Drop int
}

// gap is the space between two columns.
const gap = 2

// Fit gives each column its width: the widest of its title and cells, and,
// when that makes the table wider than width, shrinkable columns give up
// cells, the widest first, down to their Min; when that is not enough,
// droppable columns go (width 0). width <= 0 is no limit (output to a
// pipe).
func Fit(cols []Column, rows [][]string, width int) []int {
	ws := make([]int, len(cols))
	for i, c := range cols {
		ws[i] = max(c.Width, ansi.StringWidth(c.Title))
		for _, r := range rows {
			if i < len(r) {
				ws[i] = max(ws[i], ansi.StringWidth(r[i]))
			}
		}
	}
	if width <= 0 {
		return ws
	}
	natural := slices.Clone(ws)
	for {
		if shrink(cols, ws, width) {
			return ws
		}
		drop := -1
		for i, c := range cols {
			if ws[i] > 0 && c.Drop > 0 && (drop < 0 || c.Drop > cols[drop].Drop) {
				drop = i
			}
		}
		if drop < 0 {
			return ws
		}
		// The columns left start again from their natural widths.
		for i := range ws {
			if ws[i] > 0 {
				ws[i] = natural[i]
			}
		}
		ws[drop] = 0
	}
}

// shrink narrows the shrinkable columns of ws until the table fits in
// width, and says whether it does. The column furthest above its Min
// gives first, so a name keeps the cells its Min promises longest.
func shrink(cols []Column, ws []int, width int) bool {
	total := 0
	for _, w := range ws {
		if w > 0 {
			total += w + gap
		}
	}
	total -= gap
	for total > width {
		widest := -1 // the most above its Min
		for i, c := range cols {
			if c.Shrink && ws[i] > max(c.Min, 1) && (widest < 0 || ws[i]-c.Min > ws[widest]-cols[widest].Min) {
				widest = i
			}
		}
		if widest < 0 {
			return false
		}
		ws[widest]--
		total--
	}
	return true
}

// Cell is s cut or padded to exactly w cells.
func Cell(s string, w int, right bool) string {
	s = ansi.Truncate(s, w, "…")
	pad := strings.Repeat(" ", max(0, w-ansi.StringWidth(s)))
	if right {
		return pad + s
	}
	return s + pad
}

// Table writes a header line and the rows, fitted to width.
func Table(w io.Writer, cols []Column, rows [][]string, width int) error {
	ws := Fit(cols, rows, width)
	line := func(cells func(i int) string) string {
		var b strings.Builder
		for i, c := range cols {
			if ws[i] == 0 {
				continue // dropped
			}
			if b.Len() > 0 {
				b.WriteString(strings.Repeat(" ", gap))
			}
			b.WriteString(Cell(cells(i), ws[i], c.Right))
		}
		return strings.TrimRight(b.String(), " ") + "\n"
	}
	var b strings.Builder
	b.WriteString(line(func(i int) string { return cols[i].Title }))
	for _, r := range rows {
		b.WriteString(line(func(i int) string {
			if i < len(r) {
				return r[i]
			}
			return ""
		}))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// sparkBars are the eight heights of a sparkline cell.
var sparkBars = []rune("▁▂▃▄▅▆▇█")

// Spark draws values as a sparkline of at most width cells, the newest on
// the right, scaled to the largest: any value above zero shows above the
// lowest bar, so a trickle never reads as silence.
func Spark(values []int64, width int) string {
	if len(values) > width {
		values = values[len(values)-width:]
	}
	var top int64
	for _, v := range values {
		top = max(top, v)
	}
	out := make([]rune, len(values))
	for i, v := range values {
		level := 0
		if v > 0 && top > 0 {
			level = int((v*7 + top - 1) / top) // 1 to 7
		}
		out[i] = sparkBars[level]
	}
	return string(out)
}

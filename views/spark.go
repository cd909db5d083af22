package views

import (
	"strconv"
	"strings"
)

// Sparkline geometry in SVG user units; the CSS stretches the box, so only
// the proportions matter. static/limiters.js redraws with the same numbers.
const (
	sparkW = 120
	sparkH = 30
)

// sparkSeries picks one outcome out of each point, oldest first.
func sparkSeries(pts []Counts, pick func(Counts) int64) []int64 {
	if len(pts) > SparkPoints {
		pts = pts[len(pts)-SparkPoints:]
	}
	out := make([]int64, len(pts))
	for i, p := range pts {
		out[i] = pick(p)
	}
	return out
}

func acquiredOf(c Counts) int64 { return c.Acquired }
func rejectedOf(c Counts) int64 { return c.Rejected }

// sparkValues is the data-* form of a series that the script extends.
func sparkValues(pts []Counts, pick func(Counts) int64) string {
	vs := sparkSeries(pts, pick)
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = strconv.FormatInt(v, 10)
	}
	return strings.Join(s, ",")
}

// sparkPoints lays a series out right-aligned on SparkPoints slots, so a
// young series grows leftwards the way it will once the script appends,
// scaled against the largest value of both series so they share an axis.
func sparkPoints(pts []Counts, pick func(Counts) int64) string {
	vs := sparkSeries(pts, pick)
	var max int64 = 1
	for _, p := range sparkSeries(pts, func(c Counts) int64 {
		if c.Acquired > c.Rejected {
			return c.Acquired
		}
		return c.Rejected
	}) {
		if p > max {
			max = p
		}
	}
	step := float64(sparkW) / float64(SparkPoints-1)
	offset := SparkPoints - len(vs)
	var b strings.Builder
	for i, v := range vs {
		if i > 0 {
			b.WriteByte(' ')
		}
		x := float64(offset+i) * step
		y := float64(sparkH) - 1 - float64(v)/float64(max)*float64(sparkH-2)
		b.WriteString(strconv.FormatFloat(x, 'f', 1, 64))
		b.WriteByte(',')
		b.WriteString(strconv.FormatFloat(y, 'f', 1, 64))
	}
	return b.String()
}

func sparkViewBox() string {
	return "0 0 " + strconv.Itoa(sparkW) + " " + strconv.Itoa(sparkH)
}

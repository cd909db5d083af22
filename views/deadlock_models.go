package views

import (
	"math"
	"strconv"
	"time"
)

// DeadlocksPage is GET /deadlocks: every cycle of the wait-for graph.
type DeadlocksPage struct {
	Layout
	Deadlocks []DeadlockView
}

// DeadlockView is one cycle: each step's holder holds Lock and waits for
// WaitsFor, the next step's lock.
type DeadlockView struct {
	Since time.Time
	Steps []DeadlockStepView
}

// DeadlockStepView is one step of a cycle.
type DeadlockStepView struct {
	Lock   string
	Holder string // the holder field a holder-checked force-unlock names
	Who    string // the holder's client in words
	// Short names the holder in the drawing: "<app> · <owner>", or the
	// owner alone when its client is not registered.
	Short    string
	WaitsFor string
	// HeldMS is how long Holder has held Lock (0: unknown); Youngest marks
	// the hold suggested for breaking (the most recent one).
	HeldMS   int64
	Youngest bool
}

// Cycle drawing. Locks and holders alternate on a circle: lock i, its
// holder i, lock i+1, ... An arrow from a lock to its holder reads "held
// by", from a holder to the next lock "waits for". Positions are computed
// here so the template only writes them out.

// svgNode is one box of the drawing.
type svgNode struct {
	X, Y  float64
	Label string
	Lock  bool // a lock (else a holder)
}

// svgEdge is one arrow, shortened at both ends to stay outside the boxes.
type svgEdge struct {
	X1, Y1, X2, Y2 float64
	Label          string
	Wait           bool // "waits for" (else "held by")
}

// cycleDrawing is the laid-out cycle and its view box.
type cycleDrawing struct {
	W, H  float64
	Nodes []svgNode
	Edges []svgEdge
}

const (
	svgRadius  = 150.0 // of the circle the boxes sit on
	svgMargin  = 90.0  // room for labels beyond the circle
	svgBoxHalf = 34.0  // how far an arrow stops short of a box's centre
	svgLabelAt = 28    // characters kept of a label
)

// layoutCycle places d's locks and holders on a circle.
func layoutCycle(d DeadlockView) cycleDrawing {
	n := 2 * len(d.Steps)
	c := svgRadius + svgMargin
	out := cycleDrawing{W: 2 * c, H: 2 * c}
	for i := range n {
		a := 2*math.Pi*float64(i)/float64(n) - math.Pi/2
		nd := svgNode{X: c + svgRadius*math.Cos(a), Y: c + svgRadius*math.Sin(a), Lock: i%2 == 0}
		if st := d.Steps[i/2]; nd.Lock {
			nd.Label = shorten(st.Lock)
		} else {
			nd.Label = shorten(holderLabel(st))
		}
		out.Nodes = append(out.Nodes, nd)
	}
	for i := range n {
		from, to := out.Nodes[i], out.Nodes[(i+1)%n]
		dx, dy := to.X-from.X, to.Y-from.Y
		l := math.Hypot(dx, dy)
		ux, uy := dx/l, dy/l
		e := svgEdge{X1: from.X + ux*svgBoxHalf, Y1: from.Y + uy*svgBoxHalf,
			X2: to.X - ux*svgBoxHalf, Y2: to.Y - uy*svgBoxHalf, Wait: !from.Lock}
		if e.Wait {
			e.Label = "waits for"
		} else {
			e.Label = "held by"
		}
		out.Edges = append(out.Edges, e)
	}
	return out
}

// holderLabel is a holder as its ellipse names it.
func holderLabel(st DeadlockStepView) string {
	if st.Short != "" {
		return st.Short
	}
	return st.Holder
}

// shorten keeps the first svgLabelAt characters of s.
func shorten(s string) string {
	r := []rune(s)
	if len(r) <= svgLabelAt {
		return s
	}
	return string(r[:svgLabelAt-1]) + "…"
}

func px(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

func (e svgEdge) midX() string { return px((e.X1 + e.X2) / 2) }
func (e svgEdge) midY() string { return px((e.Y1+e.Y2)/2 - 4) }

// NavDeadlocks selects the Deadlocks page in the navigation.
const NavDeadlocks = "deadlocks"

// deadlockBannerText says how many cycles there are.
func deadlockBannerText(n int) string {
	if n == 1 {
		return "1 deadlock: two or more holders each wait for the other's lock, and nothing ends it but a force-unlock."
	}
	return strconv.Itoa(n) + " deadlocks: holders wait for each other's locks, and nothing ends them but a force-unlock."
}

// timeT lets templates name time.Time in a parameter list.
type timeT = time.Time

func edgeClass(e svgEdge) string {
	if e.Wait {
		return "cycle-edge cycle-wait"
	}
	return "cycle-edge"
}

// PastDeadlockView is a cycle that ended (broken from the console, or a
// holder gave up): when it was seen, until when, and its steps.
type PastDeadlockView struct {
	Since, Ended time.Time
	Steps        []DeadlockStepView
}

// Lasted is how long the cycle was seen, in words.
func (d PastDeadlockView) Lasted() string { return ageText(d.Ended.Sub(d.Since)) }

// heldForText is a hold's age, "–" when not known.
func heldForText(ms int64) string {
	if ms <= 0 {
		return "–"
	}
	return ageText(time.Duration(ms) * time.Millisecond)
}

// waitingText is how long a waiter has waited, "–" when not known.
func waitingText(ms int64) string {
	if ms < 0 {
		return "–"
	}
	return ageText(time.Duration(ms) * time.Millisecond)
}

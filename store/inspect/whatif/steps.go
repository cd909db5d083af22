package whatif

import "github.com/lockwarden/lockwarden/store/inspect"

// step is one step of demand on the replay's clock.
type step struct {
	start, width int64 // what happened in [start, start+width), Unix ms
	t            int64 // where it counts in the output points (its T)
	n, acquired  int64 // attempts, of which admitted
	fine         bool  // a stats bucket (or finer), not a history step
	// tol is how far the replay at today's settings may be off acquired
	// and still fit: half a rounding, and half what moving an edge by
	// Series.EdgeMS moves of the step's smaller outcome (so that the
	// steps' slack adds up to at most half that share of the rejections).
	tol float64
}

// steps turns s into steps on the replay's clock.
func (s Series) steps() []step {
	fine := s.StepMS <= inspect.BucketMS
	out := make([]step, 0, len(s.Points))
	for i, p := range s.Points {
		t := p.T.UnixMilli()
		w := s.StepMS
		if i == len(s.Points)-1 && s.EndMS != 0 {
			w = min(w, s.EndMS-t)
		}
		st := step{start: t - s.LagMS, width: w, t: t, n: p.Acquired + p.Rejected, acquired: p.Acquired, fine: fine}
		st.tol = 0.5 + float64(s.EdgeMS)/float64(2*s.StepMS)*float64(min(p.Acquired, p.Rejected))
		out = append(out, st)
	}
	return out
}

// bounds are the time s covers on the replay's clock; ok is false when it
// says nothing of it (no point, no FromMS or EndMS).
func (s Series) bounds() (from, end int64, ok bool) {
	n := len(s.Points)
	switch {
	case s.FromMS != 0:
		from = s.FromMS
	case n > 0:
		from = s.Points[0].T.UnixMilli()
	}
	switch {
	case s.EndMS != 0:
		end = s.EndMS
	case n > 0:
		end = s.Points[n-1].T.UnixMilli() + s.StepMS
	}
	if (s.FromMS == 0 || s.EndMS == 0) && n == 0 {
		return 0, 0, false
	}
	return from - s.LagMS, end - s.LagMS, true
}

// splice is d's steps with fine's in place of what fine covers, to the
// end of fine and no further than d's end (so the answer stays the one of
// d's last flush). The step of d that fine begins in keeps what fine does
// not hold of it, over the time before fine, when its counts allow (they
// are the same buckets, counted a tick later); else fine begins after it.
func splice(d, fine Series) []step {
	coarse := d.steps()
	cut, fEnd, ok := fine.bounds()
	if !ok {
		return coarse
	}
	if _, dEnd, dOK := d.bounds(); dOK {
		fEnd = min(fEnd, dEnd)
	}
	if cut >= fEnd {
		return coarse
	}
	fineSteps := fine.steps()
	out := make([]step, 0, len(coarse)+len(fineSteps))
	for _, s := range coarse {
		switch end := s.start + s.width; {
		case end <= cut:
			out = append(out, s)
		case s.start < cut:
			rest := s
			rest.width = cut - s.start
			for _, f := range fineSteps {
				if f.start >= cut && f.start < end {
					rest.n -= f.n
					rest.acquired -= f.acquired
				}
			}
			switch {
			case rest.acquired < 0 || rest.n < rest.acquired:
				out = append(out, s)
				cut = end
			case rest.n > 0:
				out = append(out, rest)
			}
		}
	}
	for _, s := range fineSteps {
		if s.start >= cut && s.start < fEnd {
			s.width = min(s.width, fEnd-s.start)
			out = append(out, s)
		}
	}
	for _, s := range coarse {
		if s.start >= fEnd {
			out = append(out, s)
		}
	}
	return out
}

func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a > 0) == (b > 0) {
		q++
	}
	return q
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

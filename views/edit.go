package views

import "strconv"

// The limiter edit in two steps: the form (with a reason), then the
// confirmation that shows what the change would have done to the last
// hour before anything changes.

// FieldConfirm is the edit form's second step: ConfirmYes applies it.
const (
	FieldConfirm = "confirm"
	ConfirmYes   = "yes"
)

// EditConfirm is the edit waiting for its confirmation: the values as
// typed (sent again, hidden, with the confirmation), the rule now and
// after in words, and the what-if at the new settings.
type EditConfirm struct {
	Rate, IntervalMS, KeepState, Reason string
	From, To                            string
	WhatIf                              *WhatIf
}

// Rule is a limiter's settings in words, a token bucket's as its capacity
// and refill with the rate they make: "capacity 20, refill one every
// 100 ms (10 per second)"; a Redisson limiter's "20 per 1,000 ms (20 per
// second)".
func Rule(kind string, rate int64, intervalMS, perSecond float64) string {
	if kind == KindTokenBucket {
		return "capacity " + strconv.FormatInt(rate, 10) + ", refill one every " + num(intervalMS) + " ms (" + num(perSecond) + " per second)"
	}
	return strconv.FormatInt(rate, 10) + " per " + num(intervalMS) + " ms (" + num(perSecond) + " per second)"
}

// ProposedRule is Rule for typed settings (a token bucket's per-second
// rate is its refill's; a Redisson limiter's is rate per interval); the
// typed text as it is when it does not parse.
func ProposedRule(kind, rate, intervalMS string) string {
	r, err1 := strconv.ParseInt(rate, 10, 64)
	iv, err2 := strconv.ParseFloat(intervalMS, 64)
	if err1 != nil || err2 != nil || iv <= 0 {
		return "rate " + rate + ", interval " + intervalMS + " ms"
	}
	ps := float64(r) * 1000 / iv
	if kind == KindTokenBucket {
		ps = 1000 / iv
	}
	return Rule(kind, r, iv, ps)
}

// rateLabel and intervalLabel name the edit form's fields by kind: a token
// bucket's rate is its capacity and its interval its refill.
func rateLabel(l LimiterRow) string {
	if l.Kind == KindTokenBucket {
		return "Capacity (the largest burst, in permits)"
	}
	return "Rate (permits per interval)"
}

func intervalLabel(l LimiterRow) string {
	switch l.Kind {
	case KindTokenBucket:
		return "Refill (ms for one permit to come back; 2 is 500 per second)"
	case KindRedissonLimiter:
		return "Interval (whole ms)"
	}
	return "Interval (ms)"
}

// rateWord and intervalWord stand before the numbers of a token bucket's
// row: what its rate and interval are.
func rateWord(kind string) string {
	if kind == KindTokenBucket {
		return "capacity "
	}
	return ""
}

func intervalWord(kind string) string {
	if kind == KindTokenBucket {
		return "refill "
	}
	return ""
}

package inspect

import (
	"strconv"
	"strings"
	"time"
)

// Pacing of the reconciliation walk. Without a limit the walk of a large
// keyspace was the console's main cost in Redis: a page every tick sized
// so a pass took a second. A pass now aims at a duration (default a
// minute), and a Redis CPU budget caps each page further: the walker
// measures what its SCAN and HLEN calls cost Redis (INFO commandstats,
// read every paceStatsEvery ticks) per key examined and sizes the page so
// that cost stays within the budget.

const (
	// DefaultDiscoveryPass is how long a reconciliation pass over the
	// keyspace should take.
	DefaultDiscoveryPass = time.Minute
	// DefaultDiscoveryBudget is the share of one Redis core the walk may
	// use: 0.02 is 2 %.
	DefaultDiscoveryBudget = 0.02
	// minBudgetPage is the smallest page the budget can ask for, so a pass
	// always ends.
	minBudgetPage = 100
	// maxStretch bounds how much longer than its target the budget may
	// make a pass.
	maxStretch = 2
	// paceStatsEvery is how many ticks apart the walker reads INFO
	// commandstats to measure its cost.
	paceStatsEvery = 25
)

// pacer sizes the walk's SCAN pages. It is a pure controller: it is told
// the keyspace size and what pages cost, and answers the next COUNT.
type pacer struct {
	tick   time.Duration
	pass   time.Duration
	budget float64 // share of one core

	// costPerKey is the measured Redis CPU (µs) per key a page examined,
	// smoothed; 0 until the first measurement.
	costPerKey float64

	// Counters at the last measurement.
	lastUsec float64
	lastKeys int64
	keys     int64 // keys examined so far (sum of COUNTs sent)
	measured bool

	// The walk's HGETALL and PTTL of candidates share their commandstats
	// with sampling, so they are costed at the measured µs per call:
	// readCost per candidate read, readUsec their estimated sum so far.
	readCost float64
	readUsec float64
}

func newPacer(tick, pass time.Duration, budget float64) *pacer {
	if pass <= 0 {
		pass = DefaultDiscoveryPass
	}
	if budget <= 0 {
		budget = DefaultDiscoveryBudget
	}
	return &pacer{tick: tick, pass: max(pass, tick), budget: budget}
}

// count is the next page's SCAN COUNT for a keyspace of dbSize keys: the
// share that ends a pass in p.pass, lowered to what the budget pays for.
func (p *pacer) count(dbSize int64) int64 {
	share := float64(p.tick) / float64(p.pass)
	n := max(int64(float64(dbSize)*share), MinScanPage)
	if limit := p.budgetCount(); limit > 0 {
		// The budget may stretch a pass, up to maxStretch times its
		// target: the measured cost includes time Redis was descheduled
		// on a busy host, and a walk that never ends finds nothing.
		floor := int64(float64(dbSize) * share / maxStretch)
		n = min(n, max(limit, floor))
	}
	return min(max(n, minBudgetPage), MaxScanPage)
}

// budgetCount is the page the budget pays for each tick; 0 when the cost
// is not known yet.
func (p *pacer) budgetCount() int64 {
	if p.costPerKey <= 0 {
		return 0
	}
	perTick := p.budget * float64(p.tick.Microseconds())
	return max(1, int64(perTick/p.costPerKey))
}

// sent records a page of count keys and reads candidate reads.
func (p *pacer) sent(count int64, reads int) {
	p.keys += count
	p.readUsec += float64(reads) * p.readCost
}

// observe takes a reading of INFO commandstats: Redis's cumulative µs in
// the walk's own commands and the µs per call of a candidate read. The
// first reading only sets the baseline; later ones update the cost per key
// (weighted towards the newest, so the pace follows load).
func (p *pacer) observe(usec, readCost float64) {
	p.readCost = readCost
	usec += p.readUsec
	if !p.measured || usec < p.lastUsec { // first reading, or CONFIG RESETSTAT
		p.measured, p.lastUsec, p.lastKeys = true, usec, p.keys
		return
	}
	dk := p.keys - p.lastKeys
	if dk <= 0 {
		return
	}
	cost := (usec - p.lastUsec) / float64(dk)
	if p.costPerKey == 0 {
		p.costPerKey = cost
	} else {
		p.costPerKey = 0.5*p.costPerKey + 0.5*cost
	}
	p.lastUsec, p.lastKeys = usec, p.keys
}

// walkUsec reads an INFO commandstats reply: the usec of the commands the
// walk sends alone (SCAN and HLEN; other clients' SCANs count too, which
// only makes the walk slower), and the usec per call of HGETALL plus PTTL,
// what one candidate read costs.
func walkUsec(info string) (usec, readCost float64) {
	for line := range strings.SplitSeq(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch name {
		case "cmdstat_scan", "cmdstat_hlen":
			usec += statField(rest, "usec=")
		case "cmdstat_hgetall", "cmdstat_pttl":
			readCost += statField(rest, "usec_per_call=")
		}
	}
	return usec, readCost
}

func statField(fields, prefix string) float64 {
	for kv := range strings.SplitSeq(fields, ",") {
		if v, ok := strings.CutPrefix(kv, prefix); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				return f
			}
		}
	}
	return 0
}

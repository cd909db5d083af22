package walk

import (
	"strconv"
	"strings"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// Pacing of the reconciliation walk. A pass aims at a duration (default a
// minute) and the console's Redis CPU budget caps it: the walker measures
// what its SCAN and HLEN calls (and its candidate reads) cost Redis per key
// examined, prices the tick's other commands (sampling) by their counts,
// and sizes each page so the walk stays within the budget less sampling's
// share.
//
// Two things keep passes at 1M keys on their target:
//   - pages are sized from the keys left and the time left, not per tick
//     (a pass in pass/tick ticks), and the budget pays for the time that
//     actually passed since the last page, so late ticks (a loaded host)
//     do not stretch the pass;
//   - INFO commandstats' usec is wall time: on a busy host Redis is
//     descheduled inside a SCAN call, and the walk would pay for time it
//     did not use. So it is scaled by Redis's main-thread CPU over all
//     commands' usec in the same interval (never scaled up).
//
// What is paid is the real price: SCAN ... TYPE hash on Redis 7.0 looks up
// every key a second time to read its type. Back to back that is 1.1-1.3
// µs of Redis CPU per key at 1M keys; paced one page per tick, with Redis's
// caches cold between pages, 2.0-2.5 µs (measured on a 2-core VM), so a
// 60 s pass over 1M keys costs 3-4 % of a core. A larger keyspace gets a
// longer pass (BudgetPass says how long), never a larger share of Redis.

const (
	// minWalkShare is the part of the budget the walk keeps when sampling
	// alone costs more than the budget (a huge number of objects): passes
	// get slow, but they end.
	minWalkShare = 0.2
	// protoUsec is Redis's cost per pipelined command outside the command
	// itself (reading the request, writing the reply), which commandstats
	// leaves out: about 0.25 µs measured (PING in a pipeline, Redis 7.0).
	protoUsec = 0.25
	// minBudgetPage is the smallest page the budget can ask for, so a pass
	// always ends.
	minBudgetPage = 100
	// paceStatsEvery is how many ticks apart the walker reads INFO
	// commandstats and cpu to measure its cost.
	paceStatsEvery = 25
	// assumedCostPerKey (µs of Redis CPU) sizes pages until the first
	// measurement: above what SCAN TYPE hash costs a quiet Redis 7.0, so a
	// walk that starts on 10M keys does not spend its first seconds at
	// tens of thousands of keys a tick.
	assumedCostPerKey = 2.0
	// maxPageGap bounds, in ticks, the time since the last page the budget
	// pays for (a stalled sampler does not earn one huge page).
	maxPageGap = 5
)

// pacer sizes the walk's SCAN pages. It is a pure controller: it is told
// the keyspace size, the time, and what pages cost, and answers the next
// COUNT.
type pacer struct {
	tick   time.Duration
	pass   time.Duration
	budget float64 // share of one core

	// costPerKey is the measured Redis CPU (µs) per key a page examined,
	// smoothed; 0 until the first measurement.
	costPerKey float64

	// sampleShare is what the console's other commands (sampling, the
	// registry) cost Redis over the last measured interval, as a share of
	// one core: their counts by name (others) at each command's usec_per_call
	// plus protoUsec each. The walk may use the budget less this.
	sampleShare float64
	others      map[string]int64 // commands counted since, by name
	lastAt      time.Time        // Redis time of the last measurement

	// Counters at the last measurement.
	lastUsec float64
	lastAll  float64 // every command's usec
	lastCPU  float64 // Redis main-thread CPU, µs
	lastKeys int64
	keys     int64 // keys examined so far (sum of COUNTs sent)
	measured bool

	// The walk's HGETALL and PTTL of candidates share their commandstats
	// with sampling, so they are costed at the measured µs per call:
	// readCost per candidate read, readUsec their estimated sum so far.
	readCost float64
	readUsec float64

	// The pass in progress: when its first page went out, and the keys
	// its pages have examined since.
	passStart time.Time
	passKeys  int64
	lastPage  time.Time
}

func newPacer(tick, pass time.Duration, budget float64) *pacer {
	if pass <= 0 {
		pass = inspect.DefaultDiscoveryPass
	}
	if budget <= 0 {
		budget = inspect.DefaultDiscoveryBudget
	}
	return &pacer{tick: tick, pass: max(pass, tick), budget: budget, others: map[string]int64{}}
}

// walkBudget is the share of a core the walk may use now: the budget less
// what sampling costs, never below minWalkShare of it.
func (p *pacer) walkBudget() float64 {
	return max(p.budget-p.sampleShare, p.budget*minWalkShare)
}

// countSent adds one tick's commands other than the walk's own.
func (p *pacer) countSent(sent map[string]int, walk map[string]int) {
	for name, n := range sent {
		if n -= walk[name]; n > 0 {
			p.others[name] += int64(n)
		}
	}
}

// count is the COUNT of a page sent at now over a keyspace of dbSize keys
// (first says it starts a pass): the keys left in the pass spread over the
// ticks left until its target end, lowered to what the budget pays for.
func (p *pacer) count(dbSize int64, now time.Time, first bool) int64 {
	if first || p.passStart.IsZero() {
		p.passStart, p.passKeys = now, 0
	}
	share := max(int64(float64(dbSize)*float64(p.tick)/float64(p.pass)), 1)
	// SCAN's COUNT is a hint: keys examined may fall short of the COUNTs
	// sent, so a pass whose COUNTs already cover dbSize goes on at the
	// nominal share.
	left := max(dbSize-p.passKeys, share)
	ticksLeft := int64(p.passStart.Add(p.pass).Sub(now) / p.tick)
	n := max(left/max(ticksLeft, 1), minScanPage)
	n = min(n, p.budgetCount(now))
	n = min(max(n, minBudgetPage), maxScanPage)
	p.lastPage = now
	return n
}

// budgetCount is the page the budget pays for at now: its share of the
// time since the last page (a tick at the first), at the measured cost
// or, before any measurement, at assumedCostPerKey.
func (p *pacer) budgetCount(now time.Time) int64 {
	cost := p.costPerKey
	if cost <= 0 {
		cost = assumedCostPerKey
	}
	gap := p.tick
	if !p.lastPage.IsZero() {
		gap = min(max(now.Sub(p.lastPage), p.tick), maxPageGap*p.tick)
	}
	return max(1, int64(p.walkBudget()*float64(gap.Microseconds())/cost))
}

// budgetPass is the shortest pass over dbSize keys the budget pays for; 0
// while the cost is unknown.
func (p *pacer) budgetPass(dbSize int64) time.Duration {
	if p.costPerKey <= 0 {
		return 0
	}
	return time.Duration(float64(dbSize) * p.costPerKey / p.walkBudget() * float64(time.Microsecond))
}

// sent records a page of count keys and reads candidate reads.
func (p *pacer) sent(count int64, reads int) {
	p.keys += count
	p.passKeys += count
	p.readUsec += float64(reads) * p.readCost
}

// observe takes a reading of INFO commandstats and cpu made at at (Redis
// time). The first reading only sets the baseline; later ones update the
// cost per key and sampling's share (weighted towards the newest, so the
// pace follows load).
func (p *pacer) observe(st redisCost, at time.Time) {
	p.observeSampling(st, at)
	p.readCost = st.readCost
	usec := st.walkUsec + p.readUsec
	if !p.measured || usec < p.lastUsec || st.allUsec < p.lastAll { // first reading, or CONFIG RESETSTAT
		p.measured, p.lastUsec, p.lastKeys = true, usec, p.keys
		p.lastAll, p.lastCPU = st.allUsec, st.cpuUsec
		return
	}
	dk := p.keys - p.lastKeys
	if dk <= 0 {
		return
	}
	cost := (usec - p.lastUsec) / float64(dk)
	// Wall time to CPU: the share of the commands' time Redis was on a
	// core. Redis's own work outside commands (I/O, timers) keeps the
	// ratio near or above 1 on a quiet host, so it only ever lowers.
	if all, cpu := st.allUsec-p.lastAll, st.cpuUsec-p.lastCPU; st.cpuUsec > 0 && all > 0 && cpu >= 0 && cpu < all {
		cost *= cpu / all
	}
	if p.costPerKey == 0 {
		p.costPerKey = cost
	} else {
		p.costPerKey = 0.5*p.costPerKey + 0.5*cost
	}
	p.lastUsec, p.lastKeys = usec, p.keys
	p.lastAll, p.lastCPU = st.allUsec, st.cpuUsec
}

// observeSampling prices the commands counted since the last reading.
func (p *pacer) observeSampling(st redisCost, at time.Time) {
	var usec float64
	for name, n := range p.others {
		usec += float64(n) * (st.perCall[name] + protoUsec)
	}
	clear(p.others)
	last := p.lastAt
	p.lastAt = at
	if last.IsZero() || !at.After(last) {
		return
	}
	share := usec / float64(at.Sub(last).Microseconds())
	if p.sampleShare == 0 {
		p.sampleShare = share
	} else {
		p.sampleShare = 0.5*p.sampleShare + 0.5*share
	}
}

// redisCost is what one INFO commandstats and cpu reply says.
type redisCost struct {
	perCall  map[string]float64 // usec_per_call by command name
	walkUsec float64            // SCAN and HLEN usec (other clients' count too, which only slows the walk)
	readCost float64            // usec per call of HGETALL plus PTTL: one candidate read
	allUsec  float64            // every command's usec
	cpuUsec  float64            // main-thread CPU (sys+user) in µs; 0 when not reported
}

// parseRedisCost reads an INFO commandstats and cpu reply.
func parseRedisCost(info string) redisCost {
	c := redisCost{perCall: map[string]float64{}}
	for line := range strings.SplitSeq(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch name {
		case "cmdstat_scan", "cmdstat_hlen", "cmdstat_type":
			c.walkUsec += statField(rest, "usec=")
		case "cmdstat_hgetall", "cmdstat_pttl":
			c.readCost += statField(rest, "usec_per_call=")
		case "used_cpu_sys_main_thread", "used_cpu_user_main_thread":
			if f, err := strconv.ParseFloat(rest, 64); err == nil {
				c.cpuUsec += f * 1e6
			}
		}
		if cmd, ok := strings.CutPrefix(name, "cmdstat_"); ok {
			c.allUsec += statField(rest, "usec=")
			c.perCall[cmd] = statField(rest, "usec_per_call=")
		}
	}
	return c
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

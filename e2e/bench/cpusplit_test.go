package bench

import (
	"context"
	"fmt"
	"os"
	"time"
)

// cpuSplit is where one run's CPU went, per lock + unlock pair: Redis's
// (used_cpu_sys+user), this process's (the application instances and
// their clients: getrusage), and how much of the machine stayed idle.
// Case 1 runs every instance in this process, so the process's CPU is the
// applications'. An implementation that leaves cores idle while Redis is
// not at one core is waiting on round trips, not on CPU.
type cpuSplit struct {
	redisUS, appUS float64 // µs per pair
	idleCores      float64 // idle CPUs averaged over the run
	// executed is the commands Redis ran per pair (commandstats, INFO
	// apart), scripts' own included; inside is those run by scripts, not
	// sent by the client (every command but the calls themselves).
	executed, inside float64
}

// sentCommands are the commands an implementation of case 1 sends itself
// (the script calls, a client's handshake; redislock's SET runs inside its
// obtain script); every other command Redis counts ran inside a script.
var sentCommands = map[string]bool{"evalsha": true, "eval": true, "hello": true, "client|setinfo": true,
	"script|load": true, "info": true}

// measuredPairs is uncontendedPairs with the CPU split of the run.
func measuredPairs(ctx context.Context, e *env, p lockPeer, conc int, d time.Duration) (float64, cpuSplit, error) {
	adm := e.client(1)
	defer adm.Close()
	u0, err := readRedisUsage(ctx, adm.Client)
	if err != nil {
		return 0, cpuSplit{}, err
	}
	idle0, app0, start := idleSeconds(), processCPU(), time.Now()
	rate, n, err := uncontendedPairs(ctx, e, p, conc, d)
	if err != nil {
		return 0, cpuSplit{}, err
	}
	idle1, app1, wall := idleSeconds(), processCPU(), time.Since(start)
	u1, err := readRedisUsage(ctx, adm.Client)
	if err != nil || n == 0 {
		return 0, cpuSplit{}, fmt.Errorf("read Redis CPU (pairs %d): %v", n, err)
	}
	pairs := float64(n)
	var inside int64
	for k, v := range u1.calls {
		if !sentCommands[k] {
			inside += v - u0.calls[k]
		}
	}
	return rate, cpuSplit{
		redisUS:   (u1.cpu - u0.cpu) * 1e6 / pairs,
		appUS:     (app1 - app0).Seconds() * 1e6 / pairs,
		idleCores: (idle1 - idle0) / wall.Seconds(),
		executed:  float64(totalCalls(u1, u0)) / pairs,
		inside:    float64(inside) / pairs,
	}, nil
}

// idleSeconds is the machine's idle and iowait time over all CPUs, from
// /proc/stat (USER_HZ is 100 on Linux).
func idleSeconds() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	var user, nice, sys, idle, iowait float64
	fmt.Sscanf(string(b), "cpu %f %f %f %f %f", &user, &nice, &sys, &idle, &iowait)
	return (idle + iowait) / 100
}

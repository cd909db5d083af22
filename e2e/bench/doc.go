// Package bench measures lockwarden's locks, limiters and console against the
// Go libraries people would otherwise pick (bsm/redislock, go-redsync/redsync,
// go-redis/redis_rate), in the same process, on the same private
// redis-server, interleaved case by case (A B A B ...), so that ratios are
// taken from the same round of a noisy machine.
//
// Everything lives in _test.go files because the peers are test-only
// dependencies. `make bench` runs TestBenchReport with LOCKWARDEN_BENCH_OUT
// set, which writes BENCHMARKS.md; `make test` runs TestBenchSmoke, every
// case for a moment, so the bench code cannot rot. The Benchmark* functions
// are the same cases for `go test -bench` when profiling one of them.
//
// A case stops what it starts: each closes the clients it makes (with their
// store.Client's heartbeat) before it returns, and the report and the
// smoke test check after every case that this process's goroutines are
// back to their count before it and that Redis stays idle for a moment
// (quiet_test.go). A leftover load would otherwise be measured as part of
// every later case. TestBenchLeak (LOCKWARDEN_BENCH_LEAK=rounds) runs
// cases 1-4 and shows what runs after them: commandstats, CLIENT LIST and
// the goroutine profile.
package bench

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
package bench

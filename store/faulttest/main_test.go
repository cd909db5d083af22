package faulttest

import (
	"os"
	"testing"

	"github.com/lockwarden/lockwarden/store/redistest"
)

// Each kind × fault case has its own redis-server and proxy, so cases run
// in parallel: six at once (go test's default -parallel is GOMAXPROCS, 2 on
// the target machine). Not more: the spin and token kinds poll Redis every
// 2 ms per worker, and on two cores a dozen cases at once delay ordinary
// replies past the clients' 200 ms ReadTimeout, so every row reads as a
// fault. An explicit -parallel wins.
func TestMain(m *testing.M) {
	redistest.DefaultParallel(6)
	os.Exit(m.Run())
}

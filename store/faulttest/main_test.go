package faulttest

import (
	"flag"
	"os"
	"testing"
)

// The kind × fault cases wait on timeouts, leases and pauses, not on CPU:
// run all of them at once (go test's default -parallel is GOMAXPROCS, 2 on
// the target machine, which would run the 63 cases 32 rounds deep). An
// explicit -parallel wins.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", "64")
	}
	os.Exit(m.Run())
}

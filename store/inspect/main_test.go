package inspect

import (
	"testing"

	"github.com/lockwarden/lockwarden/store/redistest"
)

// One private redis-server for the whole package; tests isolate themselves
// with redistest.Prefix. The parallel tests (nodes_hang_test.go) each stop
// a master of their own Cluster and wait out its timeouts: all three run
// at once.
func TestMain(m *testing.M) {
	redistest.DefaultParallel(3)
	redistest.Main(m)
}

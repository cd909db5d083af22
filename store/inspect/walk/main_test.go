package walk

import (
	"testing"

	"github.com/lockwarden/lockwarden/store/redistest"
)

// One private redis-server for the package; tests isolate themselves with
// redistest.Prefix, or start servers of their own where the keyspace or
// server settings are the test's subject.
func TestMain(m *testing.M) { redistest.Main(m) }

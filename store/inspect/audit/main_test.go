package audit

import (
	"testing"

	"github.com/lockwarden/lockwarden/store/redistest"
)

// One private redis-server for the whole package; tests isolate themselves
// with redistest.Prefix.
func TestMain(m *testing.M) { redistest.Main(m) }

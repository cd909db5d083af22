package auth

import (
	"testing"

	"github.com/lockwarden/lockwarden/store/redistest"
)

// One private redis-server for the package; each test has its own key
// namespace (testKeys).
func TestMain(m *testing.M) { redistest.Main(m) }

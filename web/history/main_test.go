package history_test

import (
	"testing"

	"github.com/lockwarden/lockwarden/store/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

package redistest

import (
	"context"
	"strings"
	"testing"
)

func TestMain(m *testing.M) { Main(m) }

func TestServerAnswersAndPrefixesDiffer(t *testing.T) {
	c := Client(t)
	ctx := context.Background()
	if got := c.ConfigGet(ctx, "save").Val()["save"]; got != "" {
		t.Errorf("save = %q, want persistence off", got)
	}
	a, b := Prefix(t), Prefix(t)
	if a == b || !strings.HasPrefix(a, "t:TestServerAnswersAndPrefixesDiffer:") {
		t.Errorf("prefixes %q and %q must be unique and name the test", a, b)
	}
}

func TestRestartKeepsAddressAndEmpties(t *testing.T) {
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	c := NewClient(t, s)
	ctx := context.Background()
	c.Set(ctx, "k", "v", 0)
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if n := c.Exists(ctx, "k").Val(); n != 0 {
		t.Errorf("key survived restart (EXISTS=%d): persistence must be off", n)
	}
}

func TestMissingBinaryNamesPackage(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Start()
	if err != ErrNoRedisServer || !strings.Contains(err.Error(), "apt-get install redis-server") {
		t.Fatalf("Start without redis-server = %v, want ErrNoRedisServer naming the package", err)
	}
}

// Package redistest gives tests a private redis-server.
//
// Tests in this module never talk to a shared or mocked Redis: each test
// binary starts its own redis-server on a free loopback port (no persistence,
// see package redisproc), and each test works under its own key prefix. A
// missing redis-server fails loudly, naming the package to install.
package redistest

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"

	"flag"
	"github.com/lockwarden/lockwarden/store/redisproc"
	"github.com/redis/go-redis/v9"
)

// Server is a private redis-server; see package redisproc.
type Server = redisproc.Server

// ErrNoRedisServer says the redis-server binary is not installed.
var ErrNoRedisServer = redisproc.ErrNotInstalled

// Start launches a private redis-server; the caller stops it.
func Start(extra ...string) (*Server, error) { return redisproc.Start(extra...) }

// StartT launches a private redis-server stopped when t ends.
func StartT(t testing.TB, extra ...string) *Server {
	t.Helper()
	s, err := Start(extra...)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// NewClient returns a client for s, closed when t ends. When s is the
// shared server and that is a Cluster (see TopologyEnv), the client's
// commands go through a Cluster client.
func NewClient(t testing.TB, s *Server) *redis.Client {
	t.Helper()
	var c *redis.Client
	if sharedCluster != nil && s == shared {
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: sharedCluster.Addrs()})
		t.Cleanup(func() { cc.Close() })
		c = clusterBacked(s.Addr, cc)
	} else {
		c = redis.NewClient(&redis.Options{Addr: s.Addr})
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// The shared server of a test binary, set by Main.
var shared *Server

// Main starts one redis-server (or a Cluster, see TopologyEnv) for the whole
// test binary, runs the tests and stops it. Call it from TestMain:
//
//	func TestMain(m *testing.M) { redistest.Main(m) }
func Main(m *testing.M) {
	s, err := startShared()
	if err != nil {
		fmt.Fprintln(os.Stderr, "redistest:", err)
		os.Exit(1)
	}
	shared = s
	code := m.Run()
	stopShared()
	os.Exit(code)
}

// Shared returns the server started by Main; on a Cluster, its first master.
func Shared(t testing.TB) *Server {
	t.Helper()
	if shared == nil {
		t.Fatal("redistest: no server: call redistest.Main from TestMain")
	}
	return shared
}

// Addr is the shared server's address once Main started it, "" before. It
// is for Example functions, which get no testing.TB.
func Addr() string {
	if shared == nil {
		return ""
	}
	return shared.Addr
}

// Client returns a new client for the shared server, closed when t ends.
func Client(t testing.TB) *redis.Client {
	t.Helper()
	return NewClient(t, Shared(t))
}

var seq atomic.Int64

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// Prefix returns a key prefix unique to this test and call, so tests that
// share one server never see each other's keys. It ends in ':'.
func Prefix(t testing.TB) string {
	return "t:" + unsafeChars.ReplaceAllString(t.Name(), "_") + ":" + strconv.FormatInt(seq.Add(1), 10) + ":"
}

// DefaultParallel makes go test run up to n parallel tests of this binary
// at once unless the command line says -parallel (go test's default is
// GOMAXPROCS). Packages whose parallel tests wait on timeouts, leases or
// stopped processes rather than on CPU call it from TestMain before
// running the tests.
func DefaultParallel(n int) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", strconv.Itoa(n))
	}
}

// Package redistest starts private redis-server processes for tests.
//
// Tests in this module never talk to a shared or mocked Redis: each test
// binary starts its own redis-server on a free loopback port (no persistence),
// and each test works under its own key prefix. A missing redis-server is a
// clear failure naming the package to install, never a silent skip.
package redistest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is one private redis-server child process.
type Server struct {
	Addr string // host:port on loopback

	port int
	dir  string
	args []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	output *bytes.Buffer
	exited chan struct{}
}

// ErrNoRedisServer says the redis-server binary is not installed.
var ErrNoRedisServer = errors.New("redistest: redis-server not found on PATH: install the Debian package `redis-server` (apt-get install redis-server), or run `make deps`")

// Start launches redis-server on a free 127.0.0.1 port with persistence off
// and waits until it answers PING. Extra arguments are passed to the server
// (for example "--notify-keyspace-events", "Ex").
func Start(extra ...string) (*Server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, ErrNoRedisServer
	}
	dir, err := os.MkdirTemp("", "lockwarden-redis-")
	if err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ { // a free port can be taken between probe and bind
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s := &Server{port: port, dir: dir, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
		s.args = append([]string{
			"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir,
			"--daemonize", "no", "--logfile", "", "--loglevel", "warning",
		}, extra...)
		if lastErr = s.launch(bin); lastErr == nil {
			return s, nil
		}
	}
	os.RemoveAll(dir)
	return nil, lastErr
}

func (s *Server) launch(bin string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd := exec.Command(bin, s.args...)
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = &lockedWriter{b: out}, &lockedWriter{b: out}
	// The server must die with the test binary even if it is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redistest: start redis-server: %w", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	s.cmd, s.output, s.exited = cmd, out, exited

	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("redistest: redis-server exited at start: %s", out.String())
		default:
		}
		if ping(s.Addr) == nil {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Kill()
	<-exited
	return fmt.Errorf("redistest: redis-server on %s did not answer PING within 10s: %s", s.Addr, out.String())
}

// Stop kills the server and removes its directory. It is safe to call twice.
func (s *Server) Stop() {
	s.kill()
	os.RemoveAll(s.dir)
}

func (s *Server) kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// Restart stops the server and starts it again on the same port, empty.
// Tests of reconnect behaviour use it.
func (s *Server) Restart() error {
	s.kill()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return ErrNoRedisServer
	}
	return s.launch(bin)
}

// Pause stops the server without restarting it; Resume starts it again on
// the same port. Between the two the address refuses connections.
func (s *Server) Pause() { s.kill() }

// Resume restarts a paused server on the same port.
func (s *Server) Resume() error { return s.Restart() }

// URL returns the redis:// URL of the server.
func (s *Server) URL() string { return "redis://" + s.Addr }

// Client returns a new client for the server, closed when the test ends.
func (s *Server) Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	t.Cleanup(func() { c.Close() })
	return c
}

func ping(addr string) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return c.Ping(ctx).Err()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

type lockedWriter struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.b.Len() > 64<<10 { // keep only the start: enough to explain a failure
		return len(p), nil
	}
	return w.b.Write(p)
}

// The shared server of a test binary, set by Main.
var shared *Server

// Main starts one redis-server for the whole test binary, runs the tests and
// stops it. Call it from TestMain:
//
//	func TestMain(m *testing.M) { redistest.Main(m) }
func Main(m *testing.M) {
	s, err := Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	shared = s
	code := m.Run()
	s.Stop()
	os.Exit(code)
}

// Shared returns the server started by Main.
func Shared(t testing.TB) *Server {
	t.Helper()
	if shared == nil {
		t.Fatal("redistest: no server: call redistest.Main from TestMain")
	}
	return shared
}

// Client returns a new client for the shared server, closed when t ends.
func Client(t testing.TB) *redis.Client {
	t.Helper()
	return Shared(t).Client(t)
}

var seq atomic.Int64

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// Prefix returns a key prefix unique to this test (and to this call), so
// tests sharing one server never see each other's keys. It ends in ':'.
func Prefix(t testing.TB) string {
	return "t:" + unsafeChars.ReplaceAllString(t.Name(), "_") + ":" + strconv.FormatInt(seq.Add(1), 10) + ":"
}

// Package redisproc runs a private redis-server child process on a free
// loopback port. The demo console (`lockwarden demo`) and the tests use it;
// the child never outlives its parent (Pdeathsig) and never persists data.
package redisproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNotInstalled says the redis-server binary is not on PATH.
var ErrNotInstalled = errors.New("redis-server not found on PATH: install the Debian package `redis-server` (apt-get install redis-server), or run `make deps`")

// Server is one redis-server child process.
type Server struct {
	Addr string // 127.0.0.1:port

	bin  string
	dir  string
	args []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// Start launches redis-server on a free 127.0.0.1 port with persistence off
// and waits until it answers PING. extra is appended to the arguments (for
// example "--notify-keyspace-events", "Ex").
func Start(extra ...string) (*Server, error) { return start(nil, extra) }

// start is Start with a first argument chosen per port: conf, when not nil,
// returns the arguments that go before the generated ones (a config file
// written into dir for a sentinel, which insists on one it can rewrite).
func start(conf func(dir string, port int) ([]string, error), extra []string) (*Server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, ErrNotInstalled
	}
	dir, err := os.MkdirTemp("", "lockwarden-redis-")
	if err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ { // a probed port can be taken before redis binds it
		port, err := freePort()
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		s := &Server{bin: bin, dir: dir, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
		if conf != nil {
			first, err := conf(dir, port)
			if err != nil {
				os.RemoveAll(dir)
				return nil, err
			}
			s.args = first
		}
		s.args = append(s.args,
			"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir,
			"--daemonize", "no", "--logfile", "", "--loglevel", "warning")
		s.args = append(s.args, extra...)
		if lastErr = s.launch(); lastErr == nil {
			return s, nil
		}
	}
	os.RemoveAll(dir)
	return nil, lastErr
}

func (s *Server) launch() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd := exec.Command(s.bin, s.args...)
	w := &cappedWriter{}
	cmd.Stdout, cmd.Stderr = w, w
	// The child must die with us even when we are killed with SIGKILL.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	s.cmd, s.exited = cmd, exited

	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("redis-server exited at start: %s", w.String())
		default:
		}
		if ping(s.Addr) == nil {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Kill()
	<-exited
	return fmt.Errorf("redis-server on %s did not answer PING within 10s: %s", s.Addr, w.String())
}

// Stop kills the server and removes its directory. Safe to call twice.
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

// Pause kills the server but keeps its port and directory; Resume starts it
// again, empty. Between the two the address refuses connections.
func (s *Server) Pause() { s.kill() }

// Resume starts a paused server again on the same port.
func (s *Server) Resume() error { return s.launch() }

// Restart is Pause then Resume.
func (s *Server) Restart() error {
	s.kill()
	return s.launch()
}

// Exited is closed when the current child process ends.
func (s *Server) Exited() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exited
}

// PID is the child's process id, 0 when not running.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// URL returns the redis:// URL of the server.
func (s *Server) URL() string { return "redis://" + s.Addr }

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

// cappedWriter keeps the first 64 KiB of the server's output: enough to
// explain a failed start without growing for a long-running demo.
type cappedWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *cappedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.b.Len() < 64<<10 {
		w.b.Write(p)
	}
	return len(p), nil
}

func (w *cappedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// The journeys drive the real binary: built once per test binary, started
// as `lockwarden serve` against a private redis-server.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// lockwardenBinary builds the binary once. LOCKWARDEN_E2E_BINARY names a
// prebuilt one instead (CI may build once for several jobs).
func lockwardenBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if p := os.Getenv("LOCKWARDEN_E2E_BINARY"); p != "" {
			binPath = p
			return
		}
		dir, err := os.MkdirTemp("", "lockwarden-e2e-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "lockwarden")
		out, err := exec.Command("go", "build", "-o", binPath, "../cmd/lockwarden").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// console is one running `lockwarden serve`.
type console struct {
	t      *testing.T
	URL    string
	listen string
	args   []string
	cmd    *exec.Cmd
	done   chan struct{}
	logMu  sync.Mutex
	log    strings.Builder
}

// startConsole runs `lockwarden serve --redis redisURL` on a free loopback
// port and waits until it answers /healthz.
func startConsole(t *testing.T, redisURL string, extra ...string) *console {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := l.Addr().String()
	l.Close()
	c := &console{t: t, listen: listen, URL: "http://" + listen,
		args: append([]string{"serve", "--redis", redisURL, "--listen", listen}, extra...)}
	c.start()
	t.Cleanup(func() {
		c.stop()
		if t.Failed() {
			c.logMu.Lock()
			t.Logf("lockwarden output:\n%s", c.log.String())
			c.logMu.Unlock()
		}
	})
	return c
}

func (c *console) start() {
	c.t.Helper()
	cmd := exec.Command(lockwardenBinary(c.t), c.args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.cmd, c.done = cmd, make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			c.logMu.Lock()
			c.log.WriteString(sc.Text() + "\n")
			c.logMu.Unlock()
		}
	}()
	go func() { cmd.Wait(); pw.Close(); close(c.done) }()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(c.URL + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		select {
		case <-c.done:
			c.t.Fatalf("lockwarden exited at start:\n%s", c.log.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	c.t.Fatalf("lockwarden did not answer /healthz within 15s:\n%s", c.log.String())
}

// stop sends SIGTERM and waits (bounded) for exit.
func (c *console) stop() {
	if c.cmd == nil {
		return
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		<-c.done
	}
	c.cmd = nil
}

// restart stops the console and starts it again on the same address.
func (c *console) restart() {
	c.t.Helper()
	c.stop()
	c.start()
}

// redisFor returns a private redis-server for this test and a client to it.
func redisFor(t *testing.T) (*redistest.Server, *redis.Client) {
	t.Helper()
	s := redistest.StartT(t)
	return s, redistest.NewClient(t, s)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var _ = strconv.Itoa

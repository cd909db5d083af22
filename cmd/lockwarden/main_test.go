package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/redistest"
)

// binPath is the lockwarden binary built once for the subprocess tests.
var binPath string

// sharedRedis backs the tests that need a reachable Redis.
var sharedRedis *redistest.Server

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "lockwarden-cmd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binPath = filepath.Join(dir, "lockwarden")
	build := exec.Command("go", "build", "-o", binPath, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building lockwarden:", err)
		return 1
	}
	sharedRedis, err = redistest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "redistest:", err)
		return 1
	}
	defer sharedRedis.Stop()
	return m.Run()
}

// proc is a running lockwarden subprocess with its output captured.
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	lines  chan string // stdout, line by line; closed at EOF
	stderr *syncBuffer
	done   chan struct{}
	err    error // valid after done
}

// startProc runs the binary with args and env (LOCKWARDEN_* of the test
// environment removed, so the developer's settings cannot leak in).
func startProc(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LOCKWARDEN_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	p := &proc{t: t, cmd: cmd, lines: make(chan string, 100), stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("lockwarden %s stderr:\n%s", strings.Join(args, " "), p.stderr.String())
		}
	})
	return p
}

// waitLine returns the first stdout line with prefix, failing after d.
func (p *proc) waitLine(prefix string, d time.Duration) string {
	p.t.Helper()
	deadline := time.After(d)
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				<-p.done
				p.t.Fatalf("lockwarden exited (%v) before printing %q; stderr:\n%s", p.err, prefix, p.stderr.String())
			}
			if strings.HasPrefix(line, prefix) {
				return line
			}
		case <-deadline:
			p.t.Fatalf("no stdout line starting with %q within %s; stderr:\n%s", prefix, d, p.stderr.String())
		}
	}
}

// wait waits for the process to exit and returns its exit code.
func (p *proc) wait(d time.Duration) int {
	p.t.Helper()
	go func() { // keep draining stdout so the child never blocks on it
		for range p.lines {
		}
	}()
	select {
	case <-p.done:
	case <-time.After(d):
		p.t.Fatalf("lockwarden still running after %s; stderr:\n%s", d, p.stderr.String())
	}
	if p.err == nil {
		return 0
	}
	if ee, ok := p.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	p.t.Fatalf("wait: %v", p.err)
	return -1
}

func (p *proc) signal(sig os.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("signal: %v", err)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// runInProcess runs the command line in this process, for the paths that
// end before anything long-running starts.
func runInProcess(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errw bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	code = run(ctx, args, func(k string) string { return env[k] }, &out, &errw)
	return code, out.String(), errw.String()
}

func TestCmdUsage(t *testing.T) {
	tests := []struct {
		args     []string
		code     int
		inStdout string
		inStderr string
	}{
		{nil, exitUsage, "", "Usage:"},
		{[]string{"help"}, exitOK, "Usage:", ""},
		{[]string{"--help"}, exitOK, "lockwarden demo", ""},
		{[]string{"frobnicate"}, exitUsage, "", `unknown command "frobnicate"`},
		{[]string{"version"}, exitOK, "lockwarden ", ""},
		{[]string{"serve", "--no-such-flag"}, exitUsage, "", "flag provided but not defined"},
		{[]string{"serve", "stray"}, exitUsage, "", `unexpected argument "stray"`},
		{[]string{"demo", "-listen"}, exitUsage, "", "flag needs an argument"},
		{[]string{"serve", "-h"}, exitOK, "", "-admin-token"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, "_"), func(t *testing.T) {
			code, out, errs := runInProcess(t, nil, tt.args...)
			if code != tt.code {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tt.code, errs)
			}
			if tt.inStdout != "" && !strings.Contains(out, tt.inStdout) {
				t.Errorf("stdout %q does not contain %q", out, tt.inStdout)
			}
			if tt.inStderr != "" && !strings.Contains(errs, tt.inStderr) {
				t.Errorf("stderr %q does not contain %q", errs, tt.inStderr)
			}
		})
	}
}

func TestCmdServeHelpHidesEnvToken(t *testing.T) {
	_, _, errs := runInProcess(t, map[string]string{"LOCKWARDEN_ADMIN_TOKEN": "tok-from-env"}, "serve", "-h")
	if strings.Contains(errs, "tok-from-env") {
		t.Fatalf("help text shows the token from the environment:\n%s", errs)
	}
}

// processGone reports whether pid no longer runs: absent, or a zombie
// waiting for a reaper (containers often run without one).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name, which may hold spaces.
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z' || s[i+2] == 'X'
	}
	return false
}

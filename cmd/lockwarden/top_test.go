package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/redistest"
)

// `lockwarden top` in a real terminal: tmux, on a server of its own.

// tmuxTop is one `lockwarden top` running in a tmux pane.
type tmuxTop struct {
	t        *testing.T
	sock     string
	exitFile string
}

// startTop runs the binary's top with args in a cols×rows terminal.
func startTop(t *testing.T, cols, rows int, args ...string) *tmuxTop {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("tmux is needed to drive top in a terminal (apt-get install tmux): %v", err)
	}
	dir := t.TempDir()
	tm := &tmuxTop{t: t, sock: filepath.Join(dir, "tmux.sock"), exitFile: filepath.Join(dir, "exit")}
	// No escape-time: tmux would hold a lone Esc back half a second to
	// see whether a sequence follows.
	conf := filepath.Join(dir, "tmux.conf")
	if err := os.WriteFile(conf, []byte("set -sg escape-time 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	quoted := []string{strconv.Quote(binPath), "top"}
	for _, a := range args {
		quoted = append(quoted, strconv.Quote(a))
	}
	script := fmt.Sprintf("env -u LOCKWARDEN_CONSOLE -u LOCKWARDEN_TOKEN %s; echo $? > %s; sleep 60",
		strings.Join(quoted, " "), strconv.Quote(tm.exitFile))
	tm.tmux("-f", conf, "new-session", "-d", "-s", "top", "-x", strconv.Itoa(cols), "-y", strconv.Itoa(rows), script)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the terminal at the end:\n%s", tm.screen())
		}
		_ = exec.Command("tmux", "-S", tm.sock, "kill-server").Run()
	})
	return tm
}

func (tm *tmuxTop) tmux(args ...string) string {
	tm.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", tm.sock}, args...)...).CombinedOutput()
	if err != nil {
		tm.t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (tm *tmuxTop) screen() string {
	out, err := exec.Command("tmux", "-S", tm.sock, "capture-pane", "-p", "-t", "top").CombinedOutput()
	if err != nil {
		return fmt.Sprintf("(capture-pane: %v: %s)", err, out)
	}
	return string(out)
}

// waitFor waits until the screen holds every one of want, and returns it.
func (tm *tmuxTop) waitFor(want ...string) string {
	tm.t.Helper()
	var s string
	redistest.EventuallyWithin(tm.t, 20*time.Second, "the terminal shows "+strings.Join(want, ", "), func() bool {
		s = tm.screen()
		for _, w := range want {
			if !strings.Contains(s, w) {
				return false
			}
		}
		return true
	})
	return s
}

// keys types keys one at a time, as a person would: an Esc and the key
// after it in one read would be Alt and that key.
func (tm *tmuxTop) keys(keys ...string) {
	tm.t.Helper()
	for _, k := range keys {
		tm.tmux("send-keys", "-t", "top", k)
		time.Sleep(50 * time.Millisecond)
	}
}

// text types s literally.
func (tm *tmuxTop) text(s string) {
	tm.t.Helper()
	tm.tmux("send-keys", "-t", "top", "-l", s)
}

// exitCode waits for top to end and returns its exit status.
func (tm *tmuxTop) exitCode() int {
	tm.t.Helper()
	var b []byte
	redistest.EventuallyWithin(tm.t, 10*time.Second, "top exits", func() bool {
		var err error
		b, err = os.ReadFile(tm.exitFile)
		return err == nil && strings.HasSuffix(string(b), "\n")
	})
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		tm.t.Fatalf("exit file %q: %v", b, err)
	}
	return n
}

// quit presses q and expects top to end with status 0.
func (tm *tmuxTop) quit() {
	tm.t.Helper()
	tm.keys("q")
	if code := tm.exitCode(); code != 0 {
		tm.t.Errorf("top quit with status %d, want 0", code)
	}
}

// lockRowsShown are the lines of the screen that name a lock of tc.
func lockRowsShown(screen, prefix string) []string {
	var out []string
	for _, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, prefix) && !strings.Contains(l, "filter") {
			out = append(out, l)
		}
	}
	return out
}

func TestTopShowsUpdatesFiltersExplainsAndQuits(t *testing.T) {
	tc := startConsole(t, "127.0.0.1:0")
	orders, bucket := tc.prefix+"orders:1", tc.prefix+"rl:api"
	tc.makeLock(orders, "worker-1")
	tc.makeBucket(bucket, 20, "50")
	tc.waitListed(orders, bucket)

	tm := startTop(t, 80, 24, "--console", tc.url, "--token", testViewerToken)
	tm.waitFor("live", orders, bucket, "20/s, burst 20", "orders-api on")

	// A lock taken now appears without a key pressed.
	billing := tc.prefix + "billing:7"
	tc.makeLock(billing, "worker-2")
	tm.waitFor(billing)

	// '/' filters both tables as it is typed; Enter keeps the filter.
	// Each step waits for the screen to follow, as a person would: on a
	// loaded machine keys sent back to back can reach top in one read.
	tm.keys("/")
	tm.waitFor("enter: keep")
	tm.text("billing")
	tm.waitFor("/billing", "enter: keep")
	tm.keys("Enter")
	s := tm.waitFor(`1 match "billing"`)
	if rows := lockRowsShown(s, tc.prefix); len(rows) != 1 || !strings.Contains(rows[0], billing) {
		t.Errorf("filtered on billing, the rows naming this test's objects are %q; want only %s", rows, billing)
	}

	// Read-only without --admin.
	tm.keys("u")
	tm.waitFor("read-only")

	// Enter asks the console why the selected lock is as it is; Esc is back.
	tm.keys("Enter")
	tm.waitFor("why "+billing, "worker-2", "lockwarden unlock "+billing)
	tm.keys("Escape")
	tm.waitFor("LOCKS 2", `1 match "billing"`)
	// Esc in the list drops the filter.
	tm.keys("Escape")
	tm.waitFor(orders, billing)

	tm.quit()
}

func TestTopSurvivesAConsoleRestartAndAResize(t *testing.T) {
	tc := startConsole(t, "127.0.0.1:0")
	lock := tc.prefix + "orders:2"
	tc.makeLock(lock, "worker-3")
	tc.waitListed(lock)

	tm := startTop(t, 80, 24, "--console", tc.url, "--token", testViewerToken)
	s := tm.waitFor("live", lock, "orders-api on")
	// At 80 columns the holder is cut; at 200 it is whole.
	if strings.Contains(s, "owner worker-3") {
		t.Errorf("at 80 columns the holder should be cut to leave room:\n%s", s)
	}

	if err := tc.srv.Close(); err != nil {
		t.Fatal(err)
	}
	tm.waitFor("offline")
	tc.open()
	tm.waitFor("live", lock)

	tm.tmux("resize-window", "-t", "top", "-x", "200", "-y", "50")
	tm.waitFor("owner worker-3", lock)

	tm.quit()
}

func TestTopAdminForceUnlocksAfterAReasonAndAYes(t *testing.T) {
	tc := startConsole(t, "127.0.0.1:0")
	lock := tc.prefix + "orders:3"
	tc.makeLock(lock, "worker-4")
	tc.waitListed(lock)

	tm := startTop(t, 80, 24, "--admin", "--console", tc.url, "--token", testAdminToken)
	tm.waitFor("live", lock, "admin")
	tm.keys("u")
	tm.waitFor("Force-unlock "+lock, "worker-4", "Reason:")
	tm.keys("Enter") // no reason yet
	tm.waitFor("a reason is required")
	tm.text("worker-4 hung after the failover")
	tm.keys("Enter")
	tm.waitFor("[y/N]")
	if n := tc.rdb.Exists(context.Background(), lock).Val(); n != 1 {
		t.Fatalf("the lock went before the yes")
	}
	tm.keys("y")
	tm.waitFor("force-unlocked " + lock)
	if n := tc.rdb.Exists(context.Background(), lock).Val(); n != 0 {
		t.Errorf("the lock is still there after the force-unlock")
	}
	if r := tc.audited("force-unlock", lock); r == nil || r.Reason != "worker-4 hung after the failover" {
		t.Errorf("the audit trail's force-unlock of %s is %+v; want it with its reason", lock, r)
	}
	tm.quit()
}

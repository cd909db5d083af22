package faulttest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sys/unix"
)

// A private network for the partition test, all on this machine: one
// network namespace per node (each Redis server, the Sentinel, each client
// and an observer), each with a veth into a bridge that lives in a
// namespace of its own, all on one /24. Nothing is added to the test
// process's own namespace: clients dial from their node's namespace (a
// socket belongs to the namespace it was created in), and a cut is a pair
// of iptables DROP rules on INPUT, one in each namespace, so neither side
// hears the other and neither is told (no reset, no unreachable).

// errNoNetns says the machine cannot build the lab; the test skips on it,
// or fails under LOCKWARDEN_REQUIRE_NETNS=1.
type errNoNetns struct{ why string }

func (e errNoNetns) Error() string { return e.why }

// netLab is the network: its nodes by role name.
type netLab struct {
	t      *testing.T
	tag    string // prefix of every namespace and interface name
	subnet string // "10.<a>.<b>."
	hub    string // the bridge's namespace
	nodes  map[string]*netNode
	next   int // last host number given out
}

// netNode is one namespace with one address.
type netNode struct {
	lab  *netLab
	name string
	ns   string
	ip   string
}

// newNetLab builds the bridge; nodes are added with node. It returns an
// errNoNetns when namespaces cannot be made here.
func newNetLab(t *testing.T) (*netLab, error) {
	for _, bin := range []string{"ip", "iptables"} {
		if _, err := exec.LookPath(bin); err != nil {
			return nil, errNoNetns{fmt.Sprintf("%s is not installed (iproute2, iptables: make deps-faults)", bin)}
		}
	}
	id := os.Getpid() % 10000
	l := &netLab{t: t, tag: fmt.Sprintf("lw%04d", id), subnet: fmt.Sprintf("10.%d.%d.", 100+id/250, id%250), nodes: map[string]*netNode{}}
	l.hub = l.tag + "hub"
	if out, err := exec.Command("ip", "netns", "add", l.hub).CombinedOutput(); err != nil {
		return nil, errNoNetns{fmt.Sprintf("cannot create a network namespace (ip netns add: %v: %s); the partition test needs root (CAP_NET_ADMIN)",
			err, strings.TrimSpace(string(out)))}
	}
	t.Cleanup(l.close)
	if err := l.in(l.hub, "ip", "link", "add", "br0", "type", "bridge"); err != nil {
		return nil, err
	}
	if err := l.in(l.hub, "ip", "link", "set", "br0", "up"); err != nil {
		return nil, err
	}
	if err := l.in(l.hub, "iptables", "-S"); err != nil {
		return nil, errNoNetns{"iptables does not work in a network namespace here: " + err.Error()}
	}
	return l, nil
}

// run runs a command and returns its error with its output.
func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// in runs a command inside namespace ns.
func (l *netLab) in(ns string, args ...string) error {
	return run("ip", append([]string{"netns", "exec", ns}, args...)...)
}

// node adds a namespace named for role, wired to the bridge, with the
// next address of the subnet.
func (l *netLab) node(role string) *netNode {
	l.t.Helper()
	l.next++
	n := &netNode{lab: l, name: role, ns: l.tag + role, ip: l.subnet + strconv.Itoa(10+l.next)}
	hubSide, nodeSide := fmt.Sprintf("%s%dh", l.tag, l.next), fmt.Sprintf("%s%dn", l.tag, l.next)
	steps := [][]string{
		{"ip", "netns", "add", n.ns},
		{"ip", "link", "add", hubSide, "type", "veth", "peer", "name", nodeSide},
		{"ip", "link", "set", hubSide, "netns", l.hub},
		{"ip", "link", "set", nodeSide, "netns", n.ns},
		{"ip", "netns", "exec", l.hub, "ip", "link", "set", hubSide, "master", "br0", "up"},
		{"ip", "netns", "exec", n.ns, "ip", "addr", "add", n.ip + "/24", "dev", nodeSide},
		{"ip", "netns", "exec", n.ns, "ip", "link", "set", nodeSide, "up"},
		{"ip", "netns", "exec", n.ns, "ip", "link", "set", "lo", "up"},
	}
	for _, s := range steps {
		if err := run(s[0], s[1:]...); err != nil {
			l.t.Fatalf("lab node %s: %v", role, err)
		}
	}
	l.nodes[role] = n
	return n
}

// close deletes every namespace (their veths and rules go with them).
func (l *netLab) close() {
	for _, n := range l.nodes {
		_ = run("ip", "netns", "del", n.ns)
	}
	_ = run("ip", "netns", "del", l.hub)
}

// cut makes a and b unable to hear each other, silently.
func (l *netLab) cut(a, b *netNode) {
	l.t.Helper()
	for _, p := range [][2]*netNode{{a, b}, {b, a}} {
		if err := l.in(p[0].ns, "iptables", "-A", "INPUT", "-s", p[1].ip, "-j", "DROP"); err != nil {
			l.t.Fatal(err)
		}
	}
}

// split cuts every node of one side from every node of the other.
func (l *netLab) split(one, other []*netNode) {
	l.t.Helper()
	for _, a := range one {
		for _, b := range other {
			l.cut(a, b)
		}
	}
}

// heal removes every cut.
func (l *netLab) heal() {
	l.t.Helper()
	for _, n := range l.nodes {
		if err := l.in(n.ns, "iptables", "-F", "INPUT"); err != nil {
			l.t.Fatal(err)
		}
	}
}

// dial opens a TCP connection from n's namespace: the socket is made on
// an OS thread moved into it, and stays there whichever thread uses it
// later. The thread goes back to the process's namespace before it is
// released; if it cannot, it stays locked and ends with its goroutine.
func (n *netNode) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		home, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{err: err}
			return
		}
		defer home.Close()
		target, err := os.Open(filepath.Join("/var/run/netns", n.ns))
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{err: err}
			return
		}
		defer target.Close()
		if err := setns(target); err != nil {
			runtime.UnlockOSThread()
			done <- result{err: err}
			return
		}
		c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, network, addr)
		if setns(home) == nil {
			runtime.UnlockOSThread()
		}
		done <- result{c, err}
	}()
	r := <-done
	return r.c, r.err
}

func setns(f *os.File) error {
	if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("setns: %w", err)
	}
	return nil
}

// client is a go-redis client dialling addr from n, with timeouts a cut
// trips soon (a cut never answers; the lab's round trips are sub-ms).
func (n *netNode) client(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, Dialer: n.dial, DialTimeout: time.Second,
		ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond, MaxRetries: -1})
}

// redisNode is a redis-server (or Sentinel) running in its node's
// namespace.
type redisNode struct {
	*netNode
	port int
	cmd  *exec.Cmd
	out  *bytes.Buffer
	mu   sync.Mutex
}

func (r *redisNode) addr() string { return net.JoinHostPort(r.ip, strconv.Itoa(r.port)) }

// startRedis runs redis-server in n on port with args after the common
// ones (no persistence, bound to n's address), and waits for PING from
// the observer obs.
func startRedis(t *testing.T, n *netNode, obs *netNode, port int, args ...string) *redisNode {
	t.Helper()
	dir := t.TempDir()
	r := &redisNode{netNode: n, port: port, out: &bytes.Buffer{}}
	common := []string{"--port", strconv.Itoa(port), "--bind", n.ip, "--protected-mode", "no", "--save", "",
		"--appendonly", "no", "--dir", dir, "--daemonize", "no", "--logfile", "", "--loglevel", "warning"}
	r.launch(t, append(common, args...))
	return r.waitPing(t, obs)
}

// startSentinel runs a Sentinel in n watching master (quorum 1, down
// after downAfter).
func startSentinel(t *testing.T, n *netNode, obs *netNode, master *redisNode, downAfter time.Duration) *redisNode {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	ms := strconv.FormatInt(downAfter.Milliseconds(), 10)
	text := strings.Join([]string{
		"port 26379", "bind " + n.ip, "protected-mode no", "dir " + dir,
		"sentinel monitor lw " + master.ip + " " + strconv.Itoa(master.port) + " 1",
		"sentinel down-after-milliseconds lw " + ms,
		"sentinel failover-timeout lw 5000",
		"sentinel parallel-syncs lw 1",
	}, "\n") + "\n"
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &redisNode{netNode: n, port: 26379, out: &bytes.Buffer{}}
	r.launch(t, []string{conf, "--sentinel", "--loglevel", "warning"})
	return r.waitPing(t, obs)
}

func (r *redisNode) launch(t *testing.T, args []string) {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server is not installed (make deps-redis)")
	}
	cmd := exec.Command("ip", append([]string{"netns", "exec", r.ns, bin}, args...)...)
	cmd.Stdout, cmd.Stderr = r, r
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.cmd = cmd
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
}

// Write keeps the server's output (bounded) for a failed start.
func (r *redisNode) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.out.Len() < 64<<10 {
		r.out.Write(p)
	}
	return len(p), nil
}

func (r *redisNode) waitPing(t *testing.T, obs *netNode) *redisNode {
	t.Helper()
	c := obs.client(r.addr())
	defer c.Close()
	for range 100 {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return r
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t.Fatalf("redis-server in %s did not answer at %s: %s", r.ns, r.addr(), r.out.String())
	return nil
}

package inspecttest

import (
	"bufio"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

// Real foreign clients. The tests of another library's layout drive that
// library where a registry carries it: Node.js packages (bottleneck,
// BullMQ, express-rate-limit with rate-limit-redis, redlock, ioredis,
// redis-semaphore, rate-limiter-flexible) installed by `make deps-foreign`
// into ForeignNPMDir, and Debian's php-symfony-lock and python3-redis. One
// helper process per language serves a test binary's tests one at a time
// (foreign/helper.js, helper.php, helper.py), so each interpreter starts
// once per package. With LOCKWARDEN_REQUIRE_FOREIGN=1 (make test) a
// missing client fails the test; otherwise it is skipped, saying how to
// install it.

//go:embed foreign/package.json
var foreignPackageJSON []byte

// ForeignNPMDir is where make deps-foreign installs foreign/package.json:
// a directory named by the file's hash, so a change of pins installs anew.
func ForeignNPMDir() string {
	sum := sha256.Sum256(foreignPackageJSON)
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "lockwarden", "foreign-npm-"+hex.EncodeToString(sum[:])[:12])
}

// Helper is one foreign client process: JSON lines in, JSON lines out.
type Helper struct {
	mu     sync.Mutex
	stdin  io.WriteCloser
	events chan Event
	dead   chan struct{}
	stderr *lockedBuffer
}

// Event is one line a helper wrote.
type Event struct {
	Event string         `json:"event"`
	Data  map[string]any `json:"data"`
}

var (
	helpersMu sync.Mutex
	helpers   = map[string]*Helper{}
)

// missing skips t, or fails it when make test installed the clients.
func missing(t testing.TB, what string) {
	t.Helper()
	msg := fmt.Sprintf("%s is not installed: run `make deps-foreign` (LOCKWARDEN_REQUIRE_FOREIGN=1 makes this a failure)", what)
	if os.Getenv("LOCKWARDEN_REQUIRE_FOREIGN") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// helperDir is the directory of the helper scripts.
func helperDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "foreign")
}

// Node is the Node.js helper with the pinned packages, started once.
func Node(t testing.TB) *Helper {
	t.Helper()
	node, err := exec.LookPath("node")
	dir := ForeignNPMDir()
	if _, statErr := os.Stat(filepath.Join(dir, "node_modules", "bullmq")); err != nil || statErr != nil {
		missing(t, "node with the pinned packages in "+dir)
	}
	return start(t, "node", node, []string{filepath.Join(helperDir(), "helper.js")},
		[]string{"NODE_PATH=" + filepath.Join(dir, "node_modules")})
}

// PHP is the PHP helper with Symfony Lock and phpredis, started once.
func PHP(t testing.TB) *Helper {
	t.Helper()
	php, err := exec.LookPath("php")
	if _, statErr := os.Stat("/usr/share/php/Symfony/Component/Lock/autoload.php"); err != nil || statErr != nil {
		missing(t, "php with php-symfony-lock and php-redis")
	}
	return start(t, "php", php, []string{filepath.Join(helperDir(), "helper.php")}, nil)
}

// Python is the Python helper with Debian's redis-py, started once.
func Python(t testing.TB) *Helper {
	t.Helper()
	py := "/usr/bin/python3" // Debian's, where python3-redis installs
	if exec.Command(py, "-c", "import redis").Run() != nil {
		missing(t, "python3-redis for "+py)
	}
	return start(t, "python", py, []string{filepath.Join(helperDir(), "helper.py")}, nil)
}

func start(t testing.TB, lang, bin string, args, env []string) *Helper {
	t.Helper()
	helpersMu.Lock()
	defer helpersMu.Unlock()
	if h := helpers[lang]; h != nil {
		select {
		case <-h.dead:
		default:
			return h
		}
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	h := &Helper{events: make(chan Event, 64), dead: make(chan struct{}), stderr: &lockedBuffer{}}
	cmd.Stderr = h.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the %s helper: %v", lang, err)
	}
	h.stdin = stdin
	go func() {
		defer close(h.dead)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			var e Event
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				h.events <- e
			}
		}
		_ = cmd.Wait()
	}()
	// The helper ends when the test binary does: its stdin closes.
	h.Expect(t, "ready", 30*time.Second)
	helpers[lang] = h
	return h
}

// Send writes one message.
func (h *Helper) Send(t testing.TB, msg any) {
	t.Helper()
	b, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, err := h.stdin.Write(append(b, '\n')); err != nil {
		t.Fatalf("helper: %v (stderr: %s)", err, h.stderr.String())
	}
}

// Expect waits, at most within, for the event named, failing on another
// helper's "error" or when the helper dies.
func (h *Helper) Expect(t testing.TB, event string, within time.Duration) Event {
	t.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	for {
		select {
		case e := <-h.events:
			switch e.Event {
			case event:
				return e
			case "error":
				t.Fatalf("helper error while waiting for %q: %v", event, e.Data["error"])
			}
		case <-h.dead:
			t.Fatalf("helper died while waiting for %q: %s", event, h.stderr.String())
		case <-timer.C:
			t.Fatalf("helper sent no %q in %v (stderr: %s)", event, within, h.stderr.String())
		}
	}
}

// Call sends msg and waits for the reply named op.
func (h *Helper) Call(t testing.TB, op string, msg map[string]any) Event {
	t.Helper()
	msg["op"] = op
	h.Send(t, msg)
	return h.Expect(t, op, 20*time.Second)
}

// Run starts a scenario of the Node.js helper; Stop ends it when the
// test does.
func (h *Helper) Run(t testing.TB, scenario string, args map[string]any) {
	t.Helper()
	h.Send(t, map[string]any{"run": scenario, "args": args})
	t.Cleanup(func() {
		h.Send(t, map[string]any{"signal": "stop"})
		h.Expect(t, "done", 20*time.Second)
	})
}

// Signal lets a waiting scenario go on.
func (h *Helper) Signal(t testing.TB, name string) {
	t.Helper()
	h.Send(t, map[string]any{"signal": name})
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.buf) < 64<<10 {
		b.buf = append(b.buf, p...)
	}
	return len(p), nil
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

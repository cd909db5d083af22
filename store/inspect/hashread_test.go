package inspect

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect/internal/inspecttest"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// A read by name of an application's large hash answers "not a lock" (or
// limiter) without transferring it: no HGETALL runs in Redis, inside a
// script or not (INFO commandstats counts both, on a server of the test's
// own where nothing else runs). A hash at the bound is still read whole, so
// the bound is the one the classifiers use.
func TestGetByNameNeverReadsALargeHash(t *testing.T) {
	writer, console, _ := inspecttest.Private(t)
	c := New(console, nil)
	ctx := redistest.Context(t, 30*time.Second)
	p := redistest.Prefix(t)

	fill := func(name string, fields int) {
		t.Helper()
		pipe := writer.Pipeline()
		for i := 0; i < fields; i += 1000 {
			args := make([]any, 0, 2000)
			for j := i; j < min(fields, i+1000); j++ {
				args = append(args, "f"+strconv.Itoa(j), j)
			}
			pipe.HSet(ctx, name, args...)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	hgetalls := func() int64 { return redistest.CommandCalls(t, writer)["hgetall"] }

	for _, fields := range []int{MaxHashFields + 1, 20000} {
		name := p + "app-cache-" + strconv.Itoa(fields)
		fill(name, fields)
		before := hgetalls()
		for range 5 {
			if _, err := c.GetLock(ctx, name); !errors.Is(err, store.ErrWrongKind) {
				t.Fatalf("GetLock of a hash of %d fields = %v, want store.ErrWrongKind", fields, err)
			}
			if _, err := c.GetLimiter(ctx, name); !errors.Is(err, store.ErrWrongKind) {
				t.Fatalf("GetLimiter of a hash of %d fields = %v, want store.ErrWrongKind", fields, err)
			}
			if err := c.ForceUnlock(ctx, name, "x:1"); !errors.Is(err, store.ErrWrongKind) {
				t.Fatalf("ForceUnlock of a hash of %d fields = %v, want store.ErrWrongKind", fields, err)
			}
		}
		if n := hgetalls() - before; n != 0 {
			t.Errorf("15 reads by name of a hash of %d fields ran HGETALL %d times in Redis, want 0", fields, n)
		}
		if got := writer.HLen(ctx, name).Val(); got != int64(fields) {
			t.Errorf("the hash has %d fields after the reads, want %d untouched", got, fields)
		}
	}

	// At the bound a hash is read (once, by the script) and classified: a
	// read-write lock with MaxHashFields-1 readers and its mode field.
	rw := p + "rw"
	args := []any{"mode", "read"}
	for i := range MaxHashFields - 1 {
		args = append(args, inspecttest.HolderUUID+":"+strconv.Itoa(i), 1)
	}
	writer.HSet(ctx, rw, args...)
	writer.PExpire(ctx, rw, time.Minute)
	before := hgetalls()
	l, err := c.GetLock(ctx, rw)
	if err != nil || l.Kind != KindRWLock || len(l.Holders) != MaxHashFields-1 {
		t.Fatalf("GetLock of a read lock of %d fields = %+v, %v", MaxHashFields, l, err)
	}
	if n := hgetalls() - before; n < 1 {
		t.Errorf("reading a lock ran HGETALL %d times: the count cannot tell a read from none", n)
	}

	// Other types and missing keys keep their answers.
	writer.Set(ctx, p+"str", "v", 0)
	writer.LPush(ctx, p+"list", "v")
	for _, k := range []string{p + "str", p + "list"} {
		if _, err := c.GetLock(ctx, k); !errors.Is(err, store.ErrWrongKind) {
			t.Errorf("GetLock(%s) = %v, want store.ErrWrongKind", k, err)
		}
		if _, err := c.GetLimiter(ctx, k); !errors.Is(err, store.ErrWrongKind) {
			t.Errorf("GetLimiter(%s) = %v, want store.ErrWrongKind", k, err)
		}
	}
	if _, err := c.GetLock(ctx, p+"none"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetLock of no key = %v, want ErrNotFound", err)
	}
	if _, err := c.GetLimiter(ctx, p+"none"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetLimiter of no key = %v, want ErrNotFound", err)
	}
}

// After SCRIPT FLUSH (a restart, a new Cluster node) the read sends the
// script's text and still answers.
func TestGetByNameAfterScriptFlush(t *testing.T) {
	writer, console, _ := inspecttest.Private(t)
	c := New(console, nil)
	ctx := redistest.Context(t, 30*time.Second)
	name := redistest.Prefix(t) + "lock"
	inspecttest.Lock(t, writer, name, "w1", 2)
	for round := range 2 {
		if err := writer.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		l, err := c.GetLock(ctx, name)
		if err != nil || len(l.Holders) != 1 || l.Holders[0].Count != 2 {
			t.Fatalf("round %d: GetLock after SCRIPT FLUSH = %+v, %v", round, l, err)
		}
	}
}

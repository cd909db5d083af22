package history

import "github.com/lockwarden/lockwarden/store/inspect"

// The history's keys, the console's own as web/auth's are: every key of
// one object carries the object's hash tag (inspect.ConsoleKey), so an
// object's whole history sits in one slot on a Cluster and the
// hold-writing script touches one slot; the keys that span objects carry
// the {lw-history} tag. The "lw:{" prefix keeps them all out of discovery.

// spanning starts the keys that span objects.
const spanning = "lw:{lw-history}:"

const (
	// WriterLock is the reentrant lock (store.Lock) the console replica
	// that writes the history holds; the others only read.
	WriterLock = spanning + "writer"
	// MetaKey is a hash: "through" -> Redis time (ms) of the newest sample
	// the writer has flushed, "writer" -> the writing replica's id.
	MetaKey = spanning + "meta"
	// IndexKey is a zset of the objects whose history is kept (members
	// "<kind>:<name>", kind "limiter" or "lock"; score: the object's
	// busyness at the meta key's "through", which a replica that takes
	// over ranks from).
	IndexKey = spanning + "index"
)

// FineKey and CoarseKey are a limiter's rollup rings at the fine (10 s)
// and coarse (1 min) steps: strings of fixed 16-byte records, record i
// holding step index e with e mod ring length = i, as four little-endian
// uint32s: e, acquired, rejected, errors. A record whose first word is not
// the step asked for is a step with no attempts.
func FineKey(name string) string   { return inspect.ConsoleKey("h10s", name) }
func CoarseKey(name string) string { return inspect.ConsoleKey("h1m", name) }

// HoldsKey is a lock's list of ended holds, newest first, trimmed to the
// kept number; each entry is
// "<ended> [tokens] <from ms> <to ms> <len holder> <len app> <len host> <pid> <holder><app><host>",
// the tokens (ring.go) a reader's or writer's "R" or "W" and "L<ms>", when
// its holder was last heard working on it.
func HoldsKey(name string) string { return inspect.ConsoleKey("hholds", name) }

// OpenKey is a hash of a lock's holds still running: holder ->
// "[R |W ]<from ms> <len app> <len host> <pid> <app><host>", and "x:<holder>" ->
// how that hold was ended by the console ("force-unlocked") before the
// writer saw it go.
func OpenKey(name string) string { return inspect.ConsoleKey("hopen", name) }

// WaitKey is a lock's per-minute wait ring: a string of fixed 17-byte
// records, record i holding minute index m with m mod ring length = i,
// little-endian: m mod 2^24, acquisitions, contended acquisitions (24 bits
// each), total wait ms (32 bits), longest wait ms (24 bits), and one byte:
// the inspect.WaitClassBoundsMS class of the minute's p50 wait (high
// nibble) and p99 wait (low nibble). A record whose first field is not the
// minute asked for is a minute with no acquisitions.
func WaitKey(name string) string { return inspect.ConsoleKey("hwait", name) }

package wire

// The console's history (package web/history) keeps its rollups under its
// own keys. Every key of one object carries the object's hash tag, so an
// object's whole history sits in one slot on a Cluster and the hold-writing
// script touches one slot; the keys that span objects carry the
// {lw-history} tag.

// HistoryTag is the hash tag of the history's keys that span objects.
const HistoryTag = "lw-history"

const (
	// HistoryWriterLock is the reentrant lock (store.Lock) the console
	// replica that writes the history holds; the others only read.
	HistoryWriterLock = Prefix + HistoryTag + "}:writer"
	// HistoryMetaKey is a hash: "through" -> Redis time (ms) of the newest
	// sample the writer has flushed, "writer" -> the writing replica's id.
	HistoryMetaKey = Prefix + HistoryTag + "}:meta"
	// HistoryIndexKey is a zset of the objects whose history is kept
	// (members "<kind>:<name>", kind "limiter" or "lock"; score: the
	// object's busyness at the meta key's "through", which a replica that
	// takes over ranks from).
	HistoryIndexKey = Prefix + HistoryTag + "}:index"
)

// HistoryFineKey and HistoryCoarseKey are a limiter's rollup rings at the
// fine (10 s) and coarse (1 min) steps: strings of fixed 16-byte records,
// record i holding step index e with e mod ring length = i, as four
// little-endian uint32s: e, acquired, rejected, errors. A record whose
// first word is not the step asked for is a step with no attempts.
func HistoryFineKey(name string) string   { return internalKey("h10s", name) }
func HistoryCoarseKey(name string) string { return internalKey("h1m", name) }

// HistoryHoldsKey is a lock's list of ended holds, newest first, trimmed
// to the kept number; each entry is
// "<ended> <from ms> <to ms> <len holder> <len app> <len host> <pid> <holder><app><host>".
func HistoryHoldsKey(name string) string { return internalKey("hholds", name) }

// HistoryOpenKey is a hash of a lock's holds still running: holder ->
// "<from ms> <len app> <len host> <pid> <app><host>", and "x:<holder>" ->
// how that hold was ended by the console ("force-unlocked") before the
// writer saw it go.
func HistoryOpenKey(name string) string { return internalKey("hopen", name) }

// HistoryWaitKey is a lock's per-minute wait ring: a string of fixed
// 17-byte records, record i holding minute index m with m mod ring length
// = i, little-endian: m mod 2^24, acquisitions, contended acquisitions
// (24 bits each), total wait ms (32 bits), longest wait ms (24 bits), and
// one byte: the WaitClassBoundsMS class of the minute's p50 wait (high
// nibble) and p99 wait (low nibble). A record whose first field is not
// the minute asked for is a minute with no acquisitions.
func HistoryWaitKey(name string) string { return internalKey("hwait", name) }

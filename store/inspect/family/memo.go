package family

import (
	"hash/maphash"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// A member may be read more than once in one window (a family smaller
// than a pass's worth of reads is read every few ticks). So that a window's
// hits count once, the reader remembers what it last saw of each running
// window and credits a reading only with the hits added since. The memo
// is keyed by a 64-bit hash of the member's key (a collision among 100,000
// members is about one in a billion) and holds at most memoCap
// entries over all families (about 55 bytes each: 5.5 MB at the cap,
// measured); an entry leaves when its window ends or a pass did not see
// its member. Past the cap a member's readings count in full, as if each
// were a new window: totals may then overstate, never lose, hits.
const memoCap = 100000

// memoSeed keys the memo's hashes (one per process).
var memoSeed = maphash.MakeSeed()

func memoKey(key string) uint64 { return maphash.String(memoSeed, key) }

// windowMark is the last reading of a member's running window.
type windowMark struct {
	end   int64 // unix ms the window ends; -1 without expiry or for a sliding window
	count int64
	pass  int64 // the pass (Size.Passes) that read it
}

// sameWindowSlack is how far apart two readings may put one window's end
// (each is the reader's clock plus a PTTL read a round trip later).
const sameWindowSlack = time.Second

// credit sets rd's NewAdmitted and NewRejected from what the memo saw of
// the same window, and remembers rd. A sliding window (a Redisson
// client's) has no end: its count also falls as grants age out, and then
// nothing is credited (a lower bound: grants made in between are missed).
func (r *Reader) credit(s *familyScan, rd *inspect.FamilyReading, now time.Time, sliding bool) {
	end := int64(-1)
	if rd.TTL >= 0 && !sliding {
		end = now.Add(rd.TTL).UnixMilli()
	}
	rd.NewAdmitted, rd.NewRejected = rd.Admitted(), rd.Rejected()
	mk := memoKey(rd.Key)
	m, ok := s.memo[mk]
	slack := sameWindowSlack.Milliseconds()
	if w := s.fam.Window.Milliseconds(); w > 0 {
		slack = min(slack, w/2)
	}
	if ok && (end == -1) == (m.end == -1) && abs64(end-m.end) <= slack {
		prev := inspect.FamilyReading{Count: m.count, Limit: rd.Limit}
		switch {
		case rd.Count >= m.count:
			rd.NewAdmitted, rd.NewRejected = rd.Admitted()-prev.Admitted(), rd.Rejected()-prev.Rejected()
		case sliding:
			rd.NewAdmitted, rd.NewRejected = 0, 0
		}
	}
	if ok || r.memoLen < memoCap {
		if !ok {
			r.memoLen++
		}
		s.memo[mk] = windowMark{end: end, count: rd.Count, pass: s.size.Passes}
	}
}

// sweep forgets the windows that ended and the members the last pass did
// not read.
func (r *Reader) sweep(s *familyScan, now time.Time) {
	nowMS := now.UnixMilli()
	for k, m := range s.memo {
		if (m.end >= 0 && m.end < nowMS) || m.pass < s.size.Passes-1 {
			delete(s.memo, k)
			r.memoLen--
		}
	}
}

// drop forgets s's memo (its family is gone or changed).
func (r *Reader) drop(s *familyScan) {
	if s != nil {
		r.memoLen -= len(s.memo)
	}
}

func abs64(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

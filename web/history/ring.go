package history

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"
	"time"
)

// A ring record is four little-endian uint32s: step index, then three
// counts (see FineKey).
const recordSize = 16

func sat32(v int64) uint32 {
	return uint32(min(max(v, 0), math.MaxUint32))
}

func encodeRecord(e int64, c counts) string {
	var b [recordSize]byte
	binary.LittleEndian.PutUint32(b[0:], uint32(e))
	binary.LittleEndian.PutUint32(b[4:], sat32(c.acq))
	binary.LittleEndian.PutUint32(b[8:], sat32(c.rej))
	binary.LittleEndian.PutUint32(b[12:], sat32(c.errs))
	return string(b[:])
}

// ringAt returns the counts of step e in ring (a ring's length in records
// is read from its own length, so replicas with other retentions still
// find the right record), and false when the ring has no record of e.
func ringAt(ring []byte, e int64) (counts, bool) {
	n := int64(len(ring) / recordSize)
	if n == 0 {
		return counts{}, false
	}
	r := ring[(e%n)*recordSize:]
	if binary.LittleEndian.Uint32(r) != uint32(e) {
		return counts{}, false
	}
	return counts{int64(binary.LittleEndian.Uint32(r[4:])), int64(binary.LittleEndian.Uint32(r[8:])),
		int64(binary.LittleEndian.Uint32(r[12:]))}, true
}

// Hold entries: numbers, then lengths of the strings that follow, so any
// byte may appear in a holder or an application name.

// encodeClosed is a closed hold without its leading "<ended> ", which
// history_hold_write.lua adds (the console may have marked the hold as ended by
// force in the meantime).
func encodeClosed(c closedHold) string {
	return modeToken(c.h.Mode) + strconv.FormatInt(c.from, 10) + " " + strconv.FormatInt(c.to, 10) + " " + encodeHolder(c.h)
}

func encodeOpen(o openHold) string {
	return modeToken(o.h.Mode) + strconv.FormatInt(o.from, 10) + " " + encodeClient(o.h)
}

// Tokens that may come before an entry's numbers, each a letter and its
// value then a space (entries written without them read as before): a
// read-write lock holder's mode, and when a hold's holder was last heard
// working on it past its end (a late release or renewal).
const (
	tokenRead     = "R"
	tokenWrite    = "W"
	tokenWorkedTo = "L" // followed by the Unix ms
)

func modeToken(mode string) string {
	switch mode {
	case ModeRead:
		return tokenRead + " "
	case "write":
		return tokenWrite + " "
	}
	return ""
}

// cutTokens reads the tokens off the front of s into hd.
func cutTokens(s string, hd *Hold) string {
	for s != "" && (s[0] < '0' || s[0] > '9') && s[0] != '-' {
		tok, rest, ok := strings.Cut(s, " ")
		if !ok {
			return s
		}
		switch {
		case tok == tokenRead:
			hd.Mode = ModeRead
		case tok == tokenWrite:
			hd.Mode = "write"
		case strings.HasPrefix(tok, tokenWorkedTo):
			if ms, err := strconv.ParseInt(tok[len(tokenWorkedTo):], 10, 64); err == nil {
				hd.WorkedTo = msTime(ms)
			}
		}
		s = rest
	}
	return s
}

func encodeHolder(h Holder) string {
	return strconv.Itoa(len(h.ID)) + " " + encodeClientWith(h, h.ID)
}

func encodeClient(h Holder) string { return encodeClientWith(h, "") }

func encodeClientWith(h Holder, prefix string) string {
	return strconv.Itoa(len(h.App)) + " " + strconv.Itoa(len(h.Host)) + " " + strconv.Itoa(h.PID) + " " +
		prefix + h.App + h.Host
}

// nums splits n space-separated integers off the front of s.
func nums(s string, n int) ([]int64, string, bool) {
	out := make([]int64, n)
	for i := range out {
		f, rest, ok := strings.Cut(s, " ")
		if !ok {
			return nil, "", false
		}
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, "", false
		}
		out[i], s = v, rest
	}
	return out, s, true
}

func decodeClient(v []int64, s string) (*Client, bool) {
	la, lh := int(v[0]), int(v[1])
	if la < 0 || lh < 0 || la+lh != len(s) {
		return nil, false
	}
	if la == 0 && lh == 0 && v[2] == 0 {
		return nil, true
	}
	return &Client{App: s[:la], Host: s[la:], PID: int(v[2])}, true
}

// decodeClosed parses a holds list entry.
func decodeClosed(entry string) (Hold, bool) {
	ended, rest, ok := strings.Cut(entry, " ")
	if !ok {
		return Hold{}, false
	}
	var hd Hold
	v, rest, ok := nums(cutTokens(rest, &hd), 6)
	if !ok || v[2] < 0 || int(v[2]) > len(rest) {
		return Hold{}, false
	}
	hd.Holder = rest[:v[2]]
	if hd.Client, ok = decodeClient(v[3:], rest[v[2]:]); !ok {
		return Hold{}, false
	}
	hd.From, hd.To, hd.Ended = msTime(v[0]), msTime(v[1]), ended
	if !hd.WorkedTo.After(hd.To) {
		hd.WorkedTo = time.Time{}
	}
	return hd, true
}

// decodeOpen parses a running hold of holder.
func decodeOpen(holder, val string) (Hold, bool) {
	hd := Hold{Holder: holder}
	v, rest, ok := nums(cutTokens(val, &hd), 4)
	if !ok {
		return Hold{}, false
	}
	if hd.Client, ok = decodeClient(v[1:], rest); !ok {
		return Hold{}, false
	}
	hd.From = msTime(v[0])
	return hd, true
}

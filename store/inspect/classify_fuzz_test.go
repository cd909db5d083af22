package inspect

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fuzzFields reads a hash from fuzz input: one field per line,
// "field=value" (a line without '=' is a field with an empty value).
func fuzzFields(s string) map[string]string {
	fields := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if line == "" {
			continue
		}
		f, v, _ := strings.Cut(line, "=")
		fields[f] = v
	}
	return fields
}

// Any hash an application keeps may be read by discovery or named in a
// request. Classifying one never panics, gives the same answer whatever
// the order Go's map hands the fields over in, never calls one hash both a
// lock and a limiter, and whatever it classifies holds only what the hash
// holds and encodes as JSON (an answer that cannot be encoded is a 500 for
// every viewer of the list).
func FuzzClassifyHash(f *testing.F) {
	for _, seed := range []struct {
		fields string
		pttl   int64
	}{
		{"0b9c4f6e-2a7d-4c1b-8e3f-5d6a7b8c9d0e:1=1", 30000},
		{"0b9c4f6e-2a7d-4c1b-8e3f-5d6a7b8c9d0e:1=3", -1},
		{"mode=read\nu:1=2\nu:2=1", 10000},
		{"mode=write\nu:1:write=1\nu:1=2", 10000},
		{"mode=write\nu:1:write=1\nu:2=1", 10000},
		{"last_mill_second=1700000000000\nstored_permits=3\nmax_permits=10\ninterval=100\napp=a", -1},
		{"last_mill_second=1e3\nstored_permits=-5\nmax_permits=1.5e300\ninterval=0.001\napp=a", -1},
		{"last_mill_second=0\nstored_permits=1\nmax_permits=10\ninterval=1e-310\napp=a", -1},
		{"rate=10\ninterval=60000\ntype=1", -1},
		{"rate=10\ninterval=60000\ntype=0\nkeepAliveTime=0", -1},
		{"rate=+10\ninterval=060000\ntype=0", -1},
		{"user=ann\nage=33", -1},
		{"", -2},
	} {
		f.Add(seed.fields, seed.pttl, int64(1_700_000_000_000), "orders:lock")
	}
	f.Add("u:1=1", int64(1000), int64(0), "lw:{stats}:x")
	f.Fuzz(func(t *testing.T, raw string, pttlMS, nowMS int64, name string) {
		fields := fuzzFields(raw)
		pttl := time.Duration(pttlMS)
		if pttlMS > 0 {
			pttl = time.Duration(pttlMS%(1<<40)) * time.Millisecond
		}
		lock, isLock := classifyLock(name, fields, pttl)
		lim, isLim := classifyLimiter(name, fields, nowMS)
		for range 3 { // map order varies from call to call
			l2, ok2 := classifyLock(name, fields, pttl)
			m2, ok3 := classifyLimiter(name, fields, nowMS)
			if ok2 != isLock || ok3 != isLim || !reflect.DeepEqual(l2, lock) || !reflect.DeepEqual(m2, lim) {
				t.Fatalf("%q: classification depends on map order: %+v / %+v, then %+v / %+v", raw, lock, lim, l2, m2)
			}
		}
		if isLock && isLim {
			t.Fatalf("%q is both a lock (%s) and a limiter (%s)", raw, lock.Kind, lim.Kind)
		}
		if isLock {
			if lock.Name != name || len(lock.Holders) == 0 || len(fields) > MaxHashFields {
				t.Fatalf("%q: lock %+v", raw, lock)
			}
			for _, h := range lock.Holders {
				if v, ok := fields[h.ID]; !ok || h.Count <= 0 || v != strconv.FormatInt(h.Count, 10) {
					t.Fatalf("%q: holder %+v is not a field holding its count", raw, h)
				}
			}
			if _, err := json.Marshal(lock); err != nil {
				t.Fatalf("%q: lock %+v does not encode: %v", raw, lock, err)
			}
		}
		if isLim {
			if lim.Name != name || lim.Rate < 1 || lim.IntervalMS <= 0 || lim.Available < 0 {
				t.Fatalf("%q: limiter %+v", raw, lim)
			}
			if _, err := json.Marshal(lim); err != nil {
				t.Fatalf("%q: limiter %+v does not encode: %v", raw, lim, err)
			}
		}
	})
}

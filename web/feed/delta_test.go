package feed

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/live"
	"github.com/lockwarden/lockwarden/web/present"
)

// A delta carries a lock's holders' identities only when they changed:
// not on a tick where only time passed, and whole for the lock whose
// holder changed.
func TestDeltaWhoOnlyWhenChanged(t *testing.T) {
	var d deltaState
	seen := time.UnixMilli(5000)
	snap := func(holder string, renewed int64) *live.Snapshot {
		return &live.Snapshot{
			Locks: []inspect.LockInfo{
				{Name: "a", Holders: []inspect.Holder{{ID: holder, Count: 1, AcquiredMS: 7000, RenewedMS: renewed}}},
				{Name: "b", Holders: []inspect.Holder{{ID: "tok-1", Count: 1}}},
			},
			HolderSeen: map[string]time.Time{live.HolderKey("b", "tok-1"): seen},
		}
	}
	frame := func(at int64, sn *live.Snapshot) statsCore {
		c := core(at, map[string]inspect.Counts{}, map[string]int64{"a": -1, "b": -1})
		c.Who = d.holders(sn)
		return c
	}
	const idA, idB = "11111111-1111-4111-8111-111111111111:1", "22222222-2222-4222-8222-222222222222:2"
	if b, _ := d.next(frame(1000, snap(idA, 7000))); b != nil {
		t.Fatalf("first frame must be whole, got %s", b)
	}
	b, err := d.next(frame(1200, snap(idA, 7000)))
	if err != nil {
		t.Fatal(err)
	}
	if f := decodeDelta(t, b); len(f.Who) != 0 {
		t.Errorf("nothing changed, yet the delta carries who %v", f.Who)
	}
	// a is renewed: its entry, and only its, goes out again.
	b, _ = d.next(frame(1400, snap(idA, 9000)))
	f := decodeDelta(t, b)
	if len(f.Who) != 1 || f.Who["a"][idA].RenewedAt != 9000 || f.Who["a"][idA].HeldSince != 7000 {
		t.Errorf("after a's renewal who = %+v, want only a with renewed_at 9000", f.Who)
	}
	// a changes hands.
	b, _ = d.next(frame(1600, snap(idB, 9000)))
	f = decodeDelta(t, b)
	w, ok := f.Who["a"][idB]
	if len(f.Who) != 1 || len(f.Who["a"]) != 1 || !ok {
		t.Fatalf("after the handover who = %+v, want a held by %s alone", f.Who, idB)
	}
	if w.Who != "unregistered client 22222222-2222-4222-8222-222222222222 (Redisson or other), owner 2" {
		t.Errorf("new holder described as %q", w.Who)
	}
	// A holder without recorded times is held since the console saw it.
	full := d.holders(snap(idB, 9000))["b"]["tok-1"]
	if full.HeldSince != 5000 || !full.SinceSeen || full.Who != "tok-1" {
		t.Errorf("token holder %+v, want held since the console's first sight (5000) and named by its token", full)
	}
}

// The alerts frame is replayed to every viewer that connects later, after
// the status frame; the newest replaces the one before.
func TestHubStickyAlertsReplayed(t *testing.T) {
	h := newTestHub(t)
	pub := func(sig string) { h.publishSticky(stickyAlerts, []byte("alerts:"+sig)) }
	h.broadcastStatus([]byte("up"))
	pub("old")
	pub("x")
	c := &wsClient{send: make(chan outFrame, sendBuffer)}
	if !h.register(c) {
		t.Fatal("register refused")
	}
	if b, _ := recvWithin(t, c.send, time.Second); string(b) != "up" {
		t.Errorf("first replayed frame %q, want the status", b)
	}
	if b, _ := recvWithin(t, c.send, time.Second); string(b) != "alerts:x" {
		t.Errorf("second replayed frame %q, want the alerts", b)
	}
	pub("")
	if b, _ := recvWithin(t, c.send, time.Second); string(b) != "alerts:" {
		t.Errorf("after the alerts resolved the viewer got %q", b)
	}
}

// metaEqual must agree with comparing the encoded meta, which it replaces:
// equal exactly when the JSON is, so a renewal (not in the JSON) sends no
// full frame and a new holder or a changed rate does.
func TestMetaEqualMatchesJSON(t *testing.T) {
	g1, g2 := int64(3), int64(3)
	base := func() *statsMeta {
		return &statsMeta{
			Kinds:       map[string]inspect.Kind{"a": "lock", "l": "bucket"},
			FirstSeen:   map[string]int64{"a": 1},
			LimiterInfo: map[string]limiterInfo{"l": {Kind: "bucket", Rate: 10, Grants: &g1}},
			Holders:     map[string][]inspect.Holder{"a": {{ID: "x:1", Count: 1, AcquiredMS: 5, RenewedMS: 6}}},
		}
	}
	cases := map[string]func(m *statsMeta){
		"same":           func(m *statsMeta) {},
		"renewed":        func(m *statsMeta) { m.Holders["a"][0].RenewedMS = 9 },
		"grants copy":    func(m *statsMeta) { m.LimiterInfo["l"] = limiterInfo{Kind: "bucket", Rate: 10, Grants: &g2} },
		"new holder":     func(m *statsMeta) { m.Holders["a"][0].ID = "y:1" },
		"reentered":      func(m *statsMeta) { m.Holders["a"][0].Count = 2 },
		"rate":           func(m *statsMeta) { m.LimiterInfo["l"] = limiterInfo{Kind: "bucket", Rate: 11, Grants: &g1} },
		"grants unknown": func(m *statsMeta) { m.LimiterInfo["l"] = limiterInfo{Kind: "bucket", Rate: 10} },
		"new lock":       func(m *statsMeta) { m.Kinds["b"] = "lock" },
		"first seen":     func(m *statsMeta) { m.FirstSeen["a"] = 2 },
		"node down":      func(m *statsMeta) { m.Stale = map[string]present.Stale{"a": {Node: "n:1", LastReadMS: 1}} },
	}
	for name, change := range cases {
		a, b := base(), base()
		change(b)
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if got, want := metaEqual(a, b), string(ja) == string(jb); got != want {
			t.Errorf("%s: metaEqual %v, JSON equal %v", name, got, want)
		}
	}
	if metaEqual(nil, base()) {
		t.Error("no meta sent yet, yet equal")
	}
}

// Every field of statsMeta takes part in metaEqual: one left out (the
// stale set was) means viewers never hear it change. Each field set on its
// own to a non-empty value must make the metas differ.
func TestMetaEqualCoversEveryField(t *testing.T) {
	typ := reflect.TypeOf(statsMeta{})
	for i := range typ.NumField() {
		a, b := &statsMeta{}, &statsMeta{}
		f := reflect.ValueOf(b).Elem().Field(i)
		if f.Kind() != reflect.Map {
			t.Fatalf("field %s is a %s: teach this test to fill it", typ.Field(i).Name, f.Kind())
		}
		m := reflect.MakeMap(f.Type())
		m.SetMapIndex(reflect.ValueOf("x"), reflect.New(f.Type().Elem()).Elem())
		f.Set(m)
		if metaEqual(a, b) {
			t.Errorf("metaEqual ignores %s", typ.Field(i).Name)
		}
	}
}

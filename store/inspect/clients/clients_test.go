package clients

import (
	"strconv"
	"testing"
	"time"
)

func TestClientGoneAfterThreeBeats(t *testing.T) {
	now := time.UnixMilli(1_000_000_000)
	rec := func(ageMS, beatMS int64) string {
		return `{"app":"a","host":"h","pid":1,"version":"","started_ms":1,"heartbeat_ms":` +
			strconv.FormatInt(now.UnixMilli()-ageMS, 10) + `,"beat_ms":` + strconv.FormatInt(beatMS, 10) + `}`
	}
	reg := Parse(map[string]string{"fresh": rec(14999, 5000), "gone": rec(15001, 5000), "junk": "{"}, now)
	if reg.Clients["fresh"].Gone() || !reg.Clients["gone"].Gone() {
		t.Fatalf("gone: fresh %v, gone %v", reg.Clients["fresh"].Gone(), reg.Clients["gone"].Gone())
	}
	if _, ok := reg.Clients["junk"]; ok {
		t.Fatal("unparseable record kept")
	}
}

// A record without replica_acks (an older store) says nothing about
// replica acknowledgement.
func TestRecordWithoutReplicaAcks(t *testing.T) {
	reg := Parse(map[string]string{"old": `{"app":"a","host":"h","pid":1,"heartbeat_ms":5}`}, time.UnixMilli(10))
	if ci := reg.Clients["old"]; ci.ReplicaAcks != nil || ci.Acked() != nil {
		t.Errorf("record without replica_acks: %+v", ci)
	}
}

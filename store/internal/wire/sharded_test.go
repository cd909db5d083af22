package wire

import "testing"

func TestShardedFromInfo(t *testing.T) {
	for _, c := range []struct {
		info string
		want bool
	}{
		{"# Server\r\nredis_version:7.0.15\r\n# Cluster\r\ncluster_enabled:1\r\n", true},
		{"# Server\r\nredis_version:7.2.4\r\n# Cluster\r\ncluster_enabled:0\r\n", false},
		{"# Server\r\nredis_version:6.2.14\r\n# Cluster\r\ncluster_enabled:1\r\n", false},
		{"# Server\r\nredis_version:10.0.0\r\n# Cluster\r\ncluster_enabled:1\r\n", true},
		{"", false},
	} {
		if got := shardedFromInfo(c.info); got != c.want {
			t.Errorf("shardedFromInfo(%q) = %v, want %v", c.info, got, c.want)
		}
	}
}

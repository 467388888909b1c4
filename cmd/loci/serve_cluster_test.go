package main

import (
	"strings"
	"testing"
)

// TestClusterConfigReplicas: --cluster-replicas is 0 (every node serves
// every shard) by default, and with partial replication the advertised
// address must be one other nodes can forward requests to.
func TestClusterConfigReplicas(t *testing.T) {
	cfg, err := clusterConfig("nats://127.0.0.1:4222", "n1", "16", "3", "0", "", ":3000")
	if err != nil || cfg.Replicas != 0 || cfg.Addr != ":3000" {
		t.Fatalf("defaults: %+v %v", cfg, err)
	}
	cfg, err = clusterConfig("nats://127.0.0.1:4222", "n1", "16", "3", "2", "10.0.0.11:3000", ":3000")
	if err != nil || cfg.Replicas != 2 || cfg.Addr != "10.0.0.11:3000" {
		t.Fatalf("replicas 2: %+v %v", cfg, err)
	}
	for _, c := range []struct{ replicas, advertise, addr, want string }{
		{"-1", "", "127.0.0.1:3000", "LOCI_CLUSTER_REPLICAS"},
		{"two", "", "127.0.0.1:3000", "LOCI_CLUSTER_REPLICAS"},
		{"2", "", ":3000", "LOCI_CLUSTER_ADVERTISE"},
		{"2", "0.0.0.0:3000", ":3000", "LOCI_CLUSTER_ADVERTISE"},
		{"2", "10.0.0.11", ":3000", "LOCI_CLUSTER_ADVERTISE"},
	} {
		if _, err := clusterConfig("nats://127.0.0.1:4222", "n1", "16", "3", c.replicas, c.advertise, c.addr); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("replicas %q, advertise %q, addr %q: %v, want an error naming %s", c.replicas, c.advertise, c.addr, err, c.want)
		}
	}
}

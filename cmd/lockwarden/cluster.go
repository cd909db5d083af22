package main

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store/redisproc"
)

// privateRedis is the demo's private Redis: one redis-server or, with
// --cluster, a 3-master Cluster on loopback.
type privateRedis struct {
	// console and traffic have separate pools: 20+ workers blocking in
	// Lock must never starve the console's sampler of connections.
	console, traffic redis.UniversalClient
	// exited is closed when any of the Redis processes ends.
	exited <-chan struct{}
	stop   func()
}

// Close closes the clients and kills the processes.
func (d *privateRedis) Close() {
	d.console.Close()
	d.traffic.Close()
	d.stop()
}

// startDemoRedis starts the demo's Redis with keyspace expiry notifications,
// which let the console tell an expired lock from one released with an
// unlock message, and reports where it runs on stdout.
func startDemoRedis(cluster bool, stdout io.Writer) (*privateRedis, error) {
	const notify = "KEx"
	if !cluster {
		rs, err := redisproc.Start("--notify-keyspace-events", notify)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(stdout, "lockwarden demo: redis-server at %s (pid %d)\n", rs.URL(), rs.PID())
		return &privateRedis{
			console: redis.NewClient(&redis.Options{Addr: rs.Addr, ClientName: "lockwarden"}),
			traffic: redis.NewClient(&redis.Options{Addr: rs.Addr, ClientName: "lockwarden-demo", PoolSize: 64}),
			exited:  rs.Exited(),
			stop:    rs.Stop,
		}, nil
	}
	c, err := redisproc.StartCluster(&redisproc.ClusterOptions{Extra: []string{"--notify-keyspace-events", notify}})
	if err != nil {
		return nil, err
	}
	var pids []string
	exited := make(chan struct{})
	var once sync.Once
	for _, n := range c.Nodes() {
		pids = append(pids, fmt.Sprint(n.PID()))
		go func(done <-chan struct{}) {
			<-done
			once.Do(func() { close(exited) })
		}(n.Exited())
	}
	fmt.Fprintf(stdout, "lockwarden demo: Redis Cluster of %d masters at %s (pids %s)\n",
		len(c.Masters), strings.Join(c.Addrs(), " "), strings.Join(pids, " "))
	return &privateRedis{
		console: redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), ClientName: "lockwarden"}),
		traffic: redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), ClientName: "lockwarden-demo", PoolSize: 64}),
		exited:  exited,
		stop:    c.Stop,
	}, nil
}

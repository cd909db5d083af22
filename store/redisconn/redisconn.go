// Package redisconn turns the Redis URL a user writes into a go-redis
// client for whatever stands behind it: one node, a Cluster (found by
// asking the node) or a Sentinel-managed primary.
//
// Accepted forms:
//
//	redis://[user:pass@]host:port[/db][?addr=host:port&...]   (rediss:// for TLS)
//	redis+sentinel://[user:pass@]host:port[,host:port...]/<master>[/<db>][?...]  (rediss+sentinel://)
//
// A redis:// URL names any node; when that node has cluster_enabled:1 the
// client is a *redis.ClusterClient over the whole Cluster, and ?addr= adds
// more seed nodes (go-redis's ParseClusterURL form, which implies a
// Cluster). In the sentinel form the hosts are sentinels, user:pass
// authenticates to the master (sentinels rarely need it; give them
// ?sentinel_username= and ?sentinel_password= when they do), and
// failovers are followed by go-redis's FailoverClient. Other query
// parameters are go-redis's own (dial_timeout, pool_size, ...).
//
// No error of this package contains a password from the URL.
package redisconn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrBadURL says the URL is malformed; the wrapping error says what is wrong.
var ErrBadURL = errors.New("redisconn: invalid Redis URL")

// ErrUnreachable says the URL is well formed but Redis did not answer.
var ErrUnreachable = errors.New("redisconn: cannot reach Redis")

// Topology is what stands behind a URL.
type Topology string

const (
	Single   Topology = "single"
	Cluster  Topology = "cluster"
	Sentinel Topology = "sentinel"
)

// Options tune Open; nil means the defaults.
type Options struct {
	// ClientName is sent with CLIENT SETNAME unless the URL has client_name.
	ClientName string
	// PoolSize per node, unless the URL has pool_size.
	PoolSize int
	// PingTimeout bounds the first contact. Default 5s.
	PingTimeout time.Duration
}

// Info describes the Redis Open connected to.
type Info struct {
	Topology Topology
	// Masters are the addresses that hold data: the node, every Cluster
	// master, or the Sentinel's current primary. Sorted.
	Masters []string
	// Version is redis_version of the first master asked.
	Version string
	// MasterName is the Sentinel's name for the primary.
	MasterName string
}

// Open parses rawURL, connects and checks that Redis answers. The caller
// closes the client. The client honours ctx deadlines
// (ContextTimeoutEnabled): a call whose ctx expires returns then, not after
// go-redis's read timeout, so one hung node cannot hold the console's tick
// or health check past the deadline they set.
func Open(ctx context.Context, rawURL string, opts *Options) (redis.UniversalClient, Info, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.PingTimeout <= 0 {
		o.PingTimeout = 5 * time.Second
	}
	pctx, cancel := context.WithTimeout(ctx, o.PingTimeout)
	defer cancel()

	t, err := parseTarget(rawURL, o)
	if err != nil {
		return nil, Info{}, err
	}
	switch {
	case t.sentinel != nil:
		return openSentinel(pctx, rawURL, t.sentinel)
	case t.cluster != nil:
		return openCluster(pctx, rawURL, t.cluster)
	}
	so, u := t.single, t.u
	// The probe stays on database 0: a Cluster node refuses SELECT, and
	// that refusal must become "a Cluster has only database 0".
	probeOpts := *so
	probeOpts.DB = 0
	probe := redis.NewClient(&probeOpts)
	// Plain INFO has both the server and cluster sections; naming two
	// sections needs Redis 7.
	info, err := probe.Info(pctx).Result()
	probe.Close()
	if err != nil {
		return nil, Info{}, unreachable(rawURL, err)
	}
	f := infoFields(info)
	if f["cluster_enabled"] != "1" {
		single := redis.NewClient(so)
		if err := single.Ping(pctx).Err(); err != nil {
			single.Close()
			return nil, Info{}, unreachable(rawURL, err)
		}
		return single, Info{Topology: Single, Masters: []string{so.Addr}, Version: f["redis_version"]}, nil
	}
	if so.DB != 0 {
		return nil, Info{}, badURL(rawURL, fmt.Sprintf("database %d selected, but %s is a Cluster node and a Cluster has only database 0", so.DB, so.Addr))
	}
	co, err := clusterOptions(rawURL, u)
	if err != nil {
		return nil, Info{}, err
	}
	applyCluster(co, o)
	return openCluster(pctx, rawURL, co)
}

// target is what a URL names, parsed with the Options applied, before
// anything is dialled: the sentinel form, a Cluster given by its seeds
// (?addr=), or one node that may still turn out to be a Cluster's.
type target struct {
	sentinel *redis.FailoverOptions
	cluster  *redis.ClusterOptions
	single   *redis.Options
	u        *url.URL // of single, for the cluster form if it is one
}

// parseTarget parses rawURL without any network traffic; its errors are
// ErrBadURL and contain no password of the URL.
func parseTarget(rawURL string, o Options) (target, error) {
	scheme, _, _ := strings.Cut(rawURL, "://")
	switch strings.ToLower(scheme) {
	case "redis+sentinel", "rediss+sentinel":
		fo, err := ParseSentinelURL(rawURL)
		if err != nil {
			return target{}, err
		}
		fo.ClientName = firstNonEmpty(fo.ClientName, o.ClientName)
		fo.ContextTimeoutEnabled = true
		if fo.PoolSize == 0 {
			fo.PoolSize = o.PoolSize
		}
		return target{sentinel: fo}, nil
	case "redis", "rediss":
	default:
		return target{}, badURL(rawURL, "scheme must be redis, rediss, redis+sentinel or rediss+sentinel")
	}

	u, err := url.Parse(rawURL)
	if err != nil {
		return target{}, badURL(rawURL, parseErrText(err))
	}
	if u.Query().Has("addr") { // seeds: only a Cluster has more than one node to start from
		co, err := clusterOptions(rawURL, u)
		if err != nil {
			return target{}, err
		}
		applyCluster(co, o)
		return target{cluster: co}, nil
	}

	so, err := redis.ParseURL(rawURL)
	if err != nil {
		return target{}, badURL(rawURL, parseErrText(err))
	}
	so.ClientName = firstNonEmpty(so.ClientName, o.ClientName)
	so.ContextTimeoutEnabled = true
	if so.PoolSize == 0 {
		so.PoolSize = o.PoolSize
	}
	return target{single: so, u: u}, nil
}

// clusterOptions parses a redis:// URL as go-redis's cluster form. The path
// may name database 0 only, which go-redis's parser does not accept.
func clusterOptions(rawURL string, u *url.URL) (*redis.ClusterOptions, error) {
	switch strings.Trim(u.Path, "/") {
	case "", "0":
	default:
		return nil, badURL(rawURL, fmt.Sprintf("path %q: a Cluster has only database 0", u.Path))
	}
	v := *u
	v.Path, v.RawPath = "", ""
	co, err := redis.ParseClusterURL(v.String())
	if err != nil {
		return nil, badURL(rawURL, parseErrText(err))
	}
	return co, nil
}

func applyCluster(co *redis.ClusterOptions, o Options) {
	co.ClientName = firstNonEmpty(co.ClientName, o.ClientName)
	co.ContextTimeoutEnabled = true
	if co.PoolSize == 0 {
		co.PoolSize = o.PoolSize
	}
}

func openCluster(ctx context.Context, rawURL string, co *redis.ClusterOptions) (redis.UniversalClient, Info, error) {
	cc := redis.NewClusterClient(co)
	// ForEachMaster reloads the slot map, so it also proves the seeds
	// lead to a Cluster that answers.
	var mu sync.Mutex
	info := Info{Topology: Cluster}
	err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		v, err := node.Info(ctx, "server").Result()
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		info.Masters = append(info.Masters, node.Options().Addr)
		if info.Version == "" {
			info.Version = infoFields(v)["redis_version"]
		}
		return nil
	})
	if err == nil && len(info.Masters) == 0 {
		err = errors.New("the Cluster has no master serving slots")
	}
	if err != nil {
		cc.Close()
		return nil, Info{}, unreachable(rawURL, err)
	}
	sort.Strings(info.Masters)
	return cc, info, nil
}

func openSentinel(ctx context.Context, rawURL string, fo *redis.FailoverOptions) (redis.UniversalClient, Info, error) {
	// Ask the sentinels first: their answer names the primary in Info and
	// gives a clearer error than the failover client's.
	var master string
	var lastErr error
	for _, addr := range fo.SentinelAddrs {
		sc := redis.NewSentinelClient(&redis.Options{Addr: addr, Username: fo.SentinelUsername,
			Password: fo.SentinelPassword, TLSConfig: fo.TLSConfig, DialTimeout: fo.DialTimeout, MaxRetries: -1})
		hp, err := sc.GetMasterAddrByName(ctx, fo.MasterName).Result()
		sc.Close()
		if err == nil && len(hp) == 2 {
			master = net.JoinHostPort(hp[0], hp[1])
			break
		}
		if errors.Is(err, redis.Nil) {
			err = fmt.Errorf("sentinel %s does not monitor a master named %q", addr, fo.MasterName)
		}
		lastErr = err
	}
	if master == "" {
		return nil, Info{}, unreachable(rawURL, lastErr)
	}
	fc := redis.NewFailoverClient(fo)
	v, err := fc.Info(ctx, "server").Result()
	if err != nil {
		fc.Close()
		return nil, Info{}, unreachable(rawURL, err)
	}
	return fc, Info{Topology: Sentinel, Masters: []string{master}, Version: infoFields(v)["redis_version"], MasterName: fo.MasterName}, nil
}

// ParseSentinelURL parses the redis+sentinel:// form into go-redis
// failover options. Applications may use it to build their own client.
func ParseSentinelURL(rawURL string) (*redis.FailoverOptions, error) {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return nil, badURL(rawURL, "no scheme")
	}
	tls := false
	switch strings.ToLower(scheme) {
	case "redis+sentinel":
	case "rediss+sentinel":
		tls = true
	default:
		return nil, badURL(rawURL, "scheme must be redis+sentinel or rediss+sentinel")
	}
	rest, query, _ := strings.Cut(rest, "?")
	if strings.Contains(rest, "#") {
		return nil, badURL(rawURL, "a fragment (#) is not part of a sentinel URL; the master name goes in the path")
	}
	hostPart, path, _ := strings.Cut(rest, "/")
	var userinfo *url.Userinfo
	if at := strings.LastIndexByte(hostPart, '@'); at >= 0 {
		user, pass, hasPass := strings.Cut(hostPart[:at], ":")
		var err error
		if user, err = url.PathUnescape(user); err != nil {
			return nil, badURL(rawURL, "user name is not valid percent-encoding")
		}
		if pass, err = url.PathUnescape(pass); err != nil {
			return nil, badURL(rawURL, "password is not valid percent-encoding")
		}
		if hasPass {
			userinfo = url.UserPassword(user, pass)
		} else {
			userinfo = url.User(user)
		}
		hostPart = hostPart[at+1:]
	}
	var sentinels []string
	for _, hp := range strings.Split(hostPart, ",") {
		h, p, err := net.SplitHostPort(hp)
		if err != nil || h == "" {
			return nil, badURL(rawURL, fmt.Sprintf("sentinel address %q is not host:port", hp))
		}
		if n, err := strconv.Atoi(p); err != nil || n <= 0 || n > 65535 {
			return nil, badURL(rawURL, fmt.Sprintf("sentinel address %q has no valid port", hp))
		}
		sentinels = append(sentinels, net.JoinHostPort(h, p))
	}
	segs := strings.Split(strings.Trim(path, "/"), "/")
	if segs[0] == "" {
		return nil, badURL(rawURL, "no master name: write redis+sentinel://host:port/<master>[/<db>]")
	}
	if len(segs) > 2 {
		return nil, badURL(rawURL, fmt.Sprintf("path %q has more than /<master>/<db>", "/"+path))
	}
	master, err := url.PathUnescape(segs[0])
	if err != nil {
		return nil, badURL(rawURL, "master name is not valid percent-encoding")
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, badURL(rawURL, "query: "+parseErrText(err))
	}
	for _, reserved := range []string{"addr", "master_name", "db", "username", "password"} {
		if q.Has(reserved) {
			return nil, badURL(rawURL, fmt.Sprintf("query parameter %q is given by the URL's hosts, path or user part instead", reserved))
		}
	}
	sentUser, sentPass := q.Get("sentinel_username"), q.Get("sentinel_password")
	q.Del("sentinel_username")
	q.Del("sentinel_password")
	// Rebuilt as go-redis's failover URL so every other parameter keeps
	// go-redis's meaning and its check for unknown ones.
	q.Set("master_name", master)
	for _, s := range sentinels[1:] {
		q.Add("addr", s)
	}
	if len(segs) == 2 {
		q.Set("db", segs[1])
	}
	g := url.URL{Scheme: "redis", Host: sentinels[0], RawQuery: q.Encode()}
	if tls {
		g.Scheme = "rediss"
	}
	fo, err := redis.ParseFailoverURL(g.String())
	if err != nil {
		return nil, badURL(rawURL, scrub(parseErrText(err), rawURL))
	}
	if userinfo != nil {
		fo.Username = userinfo.Username()
		fo.Password, _ = userinfo.Password()
	}
	fo.SentinelUsername, fo.SentinelPassword = sentUser, sentPass
	return fo, nil
}

func badURL(rawURL, why string) error {
	return fmt.Errorf("%w %s: %s", ErrBadURL, Redact(rawURL), scrub(why, rawURL))
}

func unreachable(rawURL string, err error) error {
	msg := "no answer"
	if err != nil {
		msg = err.Error()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		msg = "no answer in time"
	}
	return fmt.Errorf("%w at %s: %s", ErrUnreachable, Redact(rawURL), scrub(msg, rawURL))
}

// Redact returns rawURL with its passwords (user part and
// sentinel_password) replaced by "xxxxx". It copes with strings net/url
// rejects, since those are the ones most likely to end up in an error.
func Redact(rawURL string) string {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return "(unparsable URL)"
	}
	rest, query, hasQuery := strings.Cut(rest, "?")
	hostPart, path, hasPath := strings.Cut(rest, "/")
	if at := strings.LastIndexByte(hostPart, '@'); at >= 0 {
		if user, pw, ok := strings.Cut(hostPart[:at], ":"); ok && pw != "" {
			hostPart = user + ":xxxxx" + hostPart[at:]
		}
	}
	out := scheme + "://" + hostPart
	if hasPath {
		out += "/" + path
	}
	if hasQuery {
		kvs := strings.Split(query, "&")
		for i, kv := range kvs {
			if k, _, _ := strings.Cut(kv, "="); k == "password" || k == "sentinel_password" {
				kvs[i] = k + "=xxxxx"
			}
		}
		out += "?" + strings.Join(kvs, "&")
	}
	return out
}

// passwords finds every secret in rawURL, raw and decoded, longest first so
// a replacement never leaves part of a longer one behind.
func passwords(rawURL string) []string {
	var out []string
	rest := rawURL
	if _, r, ok := strings.Cut(rawURL, "://"); ok {
		rest = r
	}
	hostPart, query, _ := strings.Cut(rest, "?")
	hostPart, _, _ = strings.Cut(hostPart, "/")
	if at := strings.LastIndexByte(hostPart, '@'); at >= 0 {
		if _, pw, ok := strings.Cut(hostPart[:at], ":"); ok && pw != "" {
			out = append(out, pw)
			if d, err := url.PathUnescape(pw); err == nil && d != pw {
				out = append(out, d)
			}
		}
	}
	for _, kv := range strings.Split(query, "&") {
		k, v, _ := strings.Cut(kv, "=")
		if (k == "password" || k == "sentinel_password") && v != "" {
			out = append(out, v)
			if d, err := url.QueryUnescape(v); err == nil && d != v {
				out = append(out, d)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

func scrub(msg, rawURL string) string {
	for _, pw := range passwords(rawURL) {
		msg = strings.ReplaceAll(msg, pw, "xxxxx")
	}
	return msg
}

// parseErrText drops the URL that *url.Error quotes, keeping what is wrong.
func parseErrText(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return strings.TrimPrefix(err.Error(), "redis: ")
}

func infoFields(info string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			m[k] = v
		}
	}
	return m
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

package inspect

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect/conv"
	"github.com/lockwarden/lockwarden/store/inspect/fault"
	"github.com/lockwarden/lockwarden/store/inspect/internal/nodes"
	"github.com/lockwarden/lockwarden/store/inspect/stats"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Inspector reads and edits lockwarden's objects in one Redis deployment (a
// single node, or a Cluster through redis.ClusterClient) for the console.
type Inspector struct {
	rdb redis.UniversalClient
	// app runs the application scripts the console reuses (a token
	// bucket's modify); unbatched, since console edits are rare.
	app *store.Client
	// patterns are the string kinds' patterns (Options.Patterns, replaced by
	// SetObjectPatterns); read on every discovery and sample, so swapped
	// whole rather than locked.
	patterns atomic.Pointer[ObjectPatterns]
	// plainBuckets holds the names the last Sample classified as token
	// buckets, so the next one skips their Redisson window read (an EVALSHA
	// per limiter per tick that finds nothing; most of the sampler's Redis
	// CPU). Entries leave when a name is sampled as anything else.
	plainBuckets sync.Map
	// announced holds the string kinds store clients announced (patterns.go).
	announced announcedKinds
	// conv remembers which names hold a framework convention (package conv).
	conv conv.Memo
	// pubsub is whether force-unlocks also SPUBLISH: 0 undecided, 1 no,
	// 2 yes (a Cluster of Redis >= 7; see events_sharded.go).
	pubsub atomic.Int32
	// nodes is the masters behind rdb: which holds a key, and which the
	// last Nodes call or a sample found down (Sample leaves their keys
	// unread instead of dialing them).
	nodes *nodes.Set
	// waits keeps the locks' wait stats beyond the stats ring (waits.go).
	waits stats.WaitBook
	// ownShard is the channel set the event stream's sharded
	// subscriptions watch (nil without them), which subscriber counts
	// leave out (subscribers.go).
	ownShard atomic.Pointer[map[string]struct{}]
}

// Options tunes an Inspector. The zero value is usable; a nil *Options is too.
type Options struct {
	// Patterns say which string keys are token locks and access counters
	// (strings carry no marker of their own). Zero: none are listed. New
	// panics on invalid patterns; check them first with Validate.
	Patterns ObjectPatterns
}

// getPatterns is nil-safe: a nil *Options configures no patterns.
func (o *Options) getPatterns() ObjectPatterns {
	if o == nil {
		return ObjectPatterns{}
	}
	return o.Patterns
}

// New wraps rdb. The caller keeps ownership of rdb and closes it.
func New(rdb redis.UniversalClient, opts *Options) *Inspector {
	in := &Inspector{rdb: rdb, nodes: nodes.New(rdb), app: store.New(rdb, &store.Options{NoBatching: true, NoRegistry: true})}
	p := opts.getPatterns()
	if err := p.Validate(); err != nil {
		panic(fmt.Sprintf("inspect: Options.Patterns: %v", err))
	}
	in.patterns.Store(p.clone())
	return in
}

// Redis returns the underlying client.
func (c *Inspector) Redis() redis.UniversalClient { return c.rdb }

// ErrNotFound: no lock or limiter of a known kind at that name.
var ErrNotFound = wire.ErrNotFound

// ErrHolderChanged: a force-unlock named a holder that no longer holds the
// lock; nothing was changed.
var ErrHolderChanged = fault.ErrHolderChanged

// validateName is store's rule (wire.CheckName), so the console and
// applications refuse the same names with the same error.
func validateName(name string) error {
	if field, msg := wire.CheckName(name); field != "" {
		return &store.ValidationError{Field: field, Message: msg}
	}
	return nil
}

// invalid builds store's *ValidationError, so every validation error of the
// console maps once, by errors.Is(err, store.ErrInvalid).
func invalid(field, format string, args ...any) error {
	return &store.ValidationError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// wrongKindErr marks a WRONGTYPE reply as store.ErrWrongKind.
func wrongKindErr(err error) error {
	if isWrongType(err) {
		return fmt.Errorf("%w: %v", store.ErrWrongKind, err)
	}
	return err
}

func isWrongType(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.Contains(re.Error(), "WRONGTYPE")
}

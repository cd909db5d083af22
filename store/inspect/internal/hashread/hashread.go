// Package hashread reads a key by name at the cost of reading an object,
// whatever the key holds.
package hashread

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockwarden/lockwarden/luascripts"
	"github.com/lockwarden/lockwarden/store"
	"github.com/redis/go-redis/v9"
)

// A request may name any key, so a read by name must cost what reading an
// object costs, whatever the key holds: hash_read.lua sizes the hash with
// HLEN and transfers it only when it has at most a bound of fields, in
// one script so that no other client can grow it between the two. An
// HGETALL of an application's hash of 200,000 fields takes Redis over
// 100 ms, during which every other client waits.
var script = store.NewScript(luascripts.Source("hash_read"))

// Reply is what hash_read.lua returned for one key.
type Reply struct {
	// Size is the HLEN: 0 when there is no key, -1 when the key is not a
	// hash.
	Size int64
	// PTTL is the key's PTTL as go-redis reports it: -2 and -1 (ns) for
	// no key and no expiry, else the time left.
	PTTL  time.Duration
	NowMS int64
	// Fields are the hash's fields and values; nil when it was not read
	// (no hash, or more than Max fields).
	Fields map[string]string
	// Max is the bound the key was read with.
	Max int
}

// TooLarge says the key is a hash larger than any object's layout.
func (h Reply) TooLarge() bool { return h.Size > int64(h.Max) }

// WrongKind is store.ErrWrongKind for what the read found, saying why when
// the hash was too large to read.
func (h Reply) WrongKind(what, name string) error {
	if h.TooLarge() {
		return fmt.Errorf("store: %s %q: %w: a hash of %d fields (no %s has more than %d); it was not read",
			what, name, store.ErrWrongKind, h.Size, what, h.Max)
	}
	return fmt.Errorf("store: %s %q: %w", what, name, store.ErrWrongKind)
}

// Read reads the key at name in rdb with hash_read.lua, transferring a
// hash of at most max fields (after a NOSCRIPT, store.Script.Run sends its
// text). A read that got no reply is Redis not answering, not a change
// that may have been applied: store's UncertainError is taken off.
func Read(ctx context.Context, rdb redis.UniversalClient, name string, max int) (Reply, error) {
	vals, err := script.Run(ctx, rdb, []string{name}, max).Slice()
	if ue := (*store.UncertainError)(nil); errors.As(err, &ue) {
		err = ue.Err
	}
	if err != nil {
		return Reply{}, err
	}
	h, err := parse(vals)
	h.Max = max
	return h, err
}

// parse parses hash_read.lua's reply.
func parse(vals []any) (Reply, error) {
	if len(vals) < 3 || (len(vals)-3)%2 != 0 {
		return Reply{}, fmt.Errorf("inspect: hash_read replied %d values", len(vals))
	}
	var nums [3]int64
	for i := range nums {
		n, ok := vals[i].(int64)
		if !ok {
			return Reply{}, fmt.Errorf("inspect: hash_read reply %d is %T, not a number", i, vals[i])
		}
		nums[i] = n
	}
	h := Reply{Size: nums[0], PTTL: time.Duration(nums[1]), NowMS: nums[2]}
	if h.PTTL > 0 {
		h.PTTL *= time.Millisecond
	}
	if len(vals) == 3 {
		return h, nil
	}
	h.Fields = make(map[string]string, (len(vals)-3)/2)
	for i := 3; i < len(vals); i += 2 {
		f, ok1 := vals[i].(string)
		v, ok2 := vals[i+1].(string)
		if !ok1 || !ok2 {
			return Reply{}, fmt.Errorf("inspect: hash_read field %d is %T = %T", (i-3)/2, vals[i], vals[i+1])
		}
		h.Fields[f] = v
	}
	return h, nil
}

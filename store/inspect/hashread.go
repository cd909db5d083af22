package inspect

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockwarden/lockwarden/luascripts"
	"github.com/lockwarden/lockwarden/store"
)

// A request may name any key, so a read by name must cost what reading an
// object costs, whatever the key holds: hash_read.lua sizes the hash with
// HLEN and transfers it only when it has at most MaxHashFields fields, in
// one script so that no other client can grow it between the two. An
// HGETALL of an application's hash of 200,000 fields takes Redis over
// 100 ms, during which every other client waits.
var hashReadScript = store.NewScript(luascripts.Source("hash_read"))

// hashRead is what hash_read.lua returned for one key.
type hashRead struct {
	// size is the HLEN: 0 when there is no key, -1 when the key is not a
	// hash.
	size int64
	// pttl is the key's PTTL as go-redis reports it: -2 and -1 (ns) for
	// no key and no expiry, else the time left.
	pttl  time.Duration
	nowMS int64
	// fields are the hash's fields and values; nil when it was not read
	// (no hash, or more than MaxHashFields fields).
	fields map[string]string
}

// tooLarge says the key is a hash larger than any object's layout.
func (h hashRead) tooLarge() bool { return h.size > MaxHashFields }

// wrongKind is store.ErrWrongKind for what the read found, saying why when
// the hash was too large to read.
func (h hashRead) wrongKind(what, name string) error {
	if h.tooLarge() {
		return fmt.Errorf("store: %s %q: %w: a hash of %d fields (no %s has more than %d); it was not read",
			what, name, store.ErrWrongKind, h.size, what, MaxHashFields)
	}
	return fmt.Errorf("store: %s %q: %w", what, name, store.ErrWrongKind)
}

// readHash reads the key at name with hash_read.lua (after a NOSCRIPT,
// store.Script.Run sends its text). A read that got no reply is Redis not
// answering, not a change that may have been applied: store's
// UncertainError is taken off.
func (c *Inspector) readHash(ctx context.Context, name string) (hashRead, error) {
	vals, err := hashReadScript.Run(ctx, c.rdb, []string{name}, MaxHashFields).Slice()
	if ue := (*store.UncertainError)(nil); errors.As(err, &ue) {
		err = ue.Err
	}
	if err != nil {
		return hashRead{}, err
	}
	return parseHashRead(vals)
}

// parseHashRead parses hash_read.lua's reply.
func parseHashRead(vals []any) (hashRead, error) {
	if len(vals) < 3 || (len(vals)-3)%2 != 0 {
		return hashRead{}, fmt.Errorf("inspect: hash_read replied %d values", len(vals))
	}
	var nums [3]int64
	for i := range nums {
		n, ok := vals[i].(int64)
		if !ok {
			return hashRead{}, fmt.Errorf("inspect: hash_read reply %d is %T, not a number", i, vals[i])
		}
		nums[i] = n
	}
	h := hashRead{size: nums[0], pttl: time.Duration(nums[1]), nowMS: nums[2]}
	if h.pttl > 0 {
		h.pttl *= time.Millisecond
	}
	if len(vals) == 3 {
		return h, nil
	}
	h.fields = make(map[string]string, (len(vals)-3)/2)
	for i := 3; i < len(vals); i += 2 {
		f, ok1 := vals[i].(string)
		v, ok2 := vals[i+1].(string)
		if !ok1 || !ok2 {
			return hashRead{}, fmt.Errorf("inspect: hash_read field %d is %T = %T", (i-3)/2, vals[i], vals[i+1])
		}
		h.fields[f] = v
	}
	return h, nil
}

package inspect

import (
	"context"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/redistest"
)

func TestLimiterModify(t *testing.T) {
	c, rdb, name := tbNewBucket(t)
	ctx := context.Background()
	if _, err := c.ModifyLimiter(ctx, name, 10, 2); !errors.Is(err, store.ErrNotFound) || !errors.Is(err, store.ErrModify) {
		t.Errorf("ModifyLimiter of a missing name = %v, want store.ErrNotFound (and store.ErrModify)", err)
	}
	if n := rdb.Exists(ctx, name).Val(); n != 0 {
		t.Errorf("ModifyLimiter of a missing name created the key")
	}
	if err := c.NewTokenBucket(name, nil).Init(ctx, store.TokenBucketConfig{Capacity: 5, IntervalMS: 60000, Initial: 5}); err != nil {
		t.Fatal(err)
	}
	before := rdb.HGetAll(ctx, name).Val()
	var ve *store.ValidationError
	if _, err := c.ModifyLimiter(ctx, name, 0, 2); !errors.As(err, &ve) || ve.Field != "rate" {
		t.Errorf("ModifyLimiter rate 0 = %v, want a validation error for rate", err)
	}
	if _, err := c.ModifyLimiter(ctx, name, 5, -2); !errors.As(err, &ve) || ve.Field != "interval_ms" {
		t.Errorf("ModifyLimiter interval -2 = %v, want a validation error for interval_ms", err)
	}
	if after := rdb.HGetAll(ctx, name).Val(); len(after) != len(before) || after["max_permits"] != before["max_permits"] ||
		after["interval"] != before["interval"] || after["stored_permits"] != before["stored_permits"] {
		t.Errorf("invalid ModifyLimiter changed the bucket: %v -> %v", before, after)
	}

	rdb.Set(ctx, name+":str", "x", 0)
	if _, err := c.ModifyLimiter(ctx, name+":str", 5, 2); !errors.Is(err, store.ErrWrongKind) {
		t.Errorf("ModifyLimiter of a string key = %v, want store.ErrWrongKind", err)
	}
	rdb.HSet(ctx, name+":h", "user", "42")
	if _, err := c.ModifyLimiter(ctx, name+":h", 5, 2); !errors.Is(err, store.ErrWrongKind) {
		t.Errorf("ModifyLimiter of an application hash = %v, want store.ErrWrongKind", err)
	}

	// The write is checked in Redis first, so a missing parseTokenBucket
	// shows up below as a read failure, not as a silent non-change.
	info, err := c.ModifyLimiter(ctx, name, 3, 0.5)
	_, stored, maxPermits, interval, _ := redistest.BucketFields(t, rdb, name)
	if maxPermits != 3 || interval != 0.5 || stored != 3 {
		t.Errorf("after ModifyLimiter(3, 0.5): max %v interval %v stored %v, want 3, 0.5, 3", maxPermits, interval, stored)
	}
	if err != nil {
		t.Fatalf("ModifyLimiter(3, 0.5) = %v", err)
	}
	if info.Kind != KindTokenBucket || info.Rate != 3 || info.IntervalMS != 0.5 || info.Available != 3 || info.PerSecond != 2000 {
		t.Errorf("ModifyLimiter returned %+v, want a token bucket of 3 per 0.5 ms, 3 available, 2000/s", *info)
	}
}

// TestLimiterGet needs parseTokenBucket from classify.go.
func TestLimiterGet(t *testing.T) {
	c, rdb, name := tbNewBucket(t)
	ctx := context.Background()
	if _, err := c.GetLimiter(ctx, name); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetLimiter of a missing name = %v, want store.ErrNotFound", err)
	}
	rdb.Set(ctx, name+":str", "x", 0)
	if _, err := c.GetLimiter(ctx, name+":str"); !errors.Is(err, store.ErrWrongKind) {
		t.Errorf("GetLimiter of a string key = %v, want store.ErrWrongKind", err)
	}
	rdb.HSet(ctx, name+":h", "user", "42")
	if _, err := c.GetLimiter(ctx, name+":h"); !errors.Is(err, store.ErrWrongKind) {
		t.Errorf("GetLimiter of an application hash = %v, want store.ErrWrongKind", err)
	}

	// Stored 1 long ago with a 10 ms interval: the read must include the
	// refill up to Redis now, capped at the capacity.
	rdb.HSet(ctx, name, "last_mill_second", redistest.NowMS(t, rdb)-100000, "stored_permits", 1,
		"max_permits", 500, "interval", "2.0", "app", "orders")
	info, err := c.GetLimiter(ctx, name)
	if err != nil {
		t.Fatalf("GetLimiter = %v", err)
	}
	want := LimiterInfo{Name: name, Kind: KindTokenBucket, Rate: 500, IntervalMS: 2, PerSecond: 500, Available: 500, App: "orders"}
	if !reflect.DeepEqual(*info, want) {
		t.Errorf("GetLimiter = %+v, want %+v", *info, want)
	}
}

// Bad rates are refused before anything is sent, whatever the key holds.
func TestModifyLimiterValidationSendsNothing(t *testing.T) {
	c, rdb, name := tbNewBucket(t)
	ctx := t.Context()
	for _, tc := range []struct {
		field      string
		rate       int64
		intervalMS float64
	}{{"rate", 0, 2}, {"interval_ms", 5, math.Inf(1)}, {"interval_ms", 5, math.NaN()}} {
		var ve *store.ValidationError
		_, err := c.ModifyLimiter(ctx, name, tc.rate, tc.intervalMS)
		if !errors.As(err, &ve) || ve.Field != tc.field || !errors.Is(err, store.ErrInvalid) {
			t.Errorf("ModifyLimiter(%d, %g) = %v, want a *store.ValidationError for %q", tc.rate, tc.intervalMS, err, tc.field)
		}
	}
	if n := rdb.Exists(ctx, name).Val(); n != 0 {
		t.Errorf("a refused modify created the key")
	}
}

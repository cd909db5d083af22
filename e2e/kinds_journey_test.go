package e2e

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Journeys for kinds other clients write: a Redisson read-write lock and a
// Redisson 3.34 sliding-window limiter, built with the commands Redisson
// sends, then inspected and changed in the browser; Redis is checked after.

const kindsUUID = "5b0c7a1e-2d3f-4a6b-9c8d-0e1f2a3b4c5d"

func TestJourneyKindsReadWriteLock(t *testing.T) {
	j := newJourney(t)
	rdb, ctx := j.rdb, j.ctx
	const name = "report:{2025}"
	r1, r2 := kindsUUID+":41", kindsUUID+":42"
	// Redisson's read lock: the hash in read mode, a reentry count per
	// thread, one lease key per read level (suffixName keeps a name that
	// has braces as it is).
	rdb.HSet(ctx, name, "mode", "read", r1, 2, r2, 1)
	level := func(h string, n string) string { return name + ":" + h + ":rwlock_timeout:" + n }
	for _, k := range []string{level(r1, "1"), level(r1, "2"), level(r2, "1")} {
		rdb.Set(ctx, k, 1, time.Minute)
	}
	rdb.PExpire(ctx, name, time.Minute)

	j.open("/locks")
	row := `[data-testid=lock-row][data-lock="` + name + `"]`
	if got := j.words(row + ` [data-field=kind]`); got != "rwlock" {
		t.Errorf("kind shown %q, want rwlock", got)
	}
	if got := j.words(row + ` [data-testid=lock-holders]`); got != r1+" ×2 (read), "+r2+" ×1 (read)" {
		t.Errorf("holders shown %q", got)
	}
	j.clickTo(row + ` [data-testid=lock-link]`)
	if got := j.words(`[data-testid=lock-mode]`); got != "read" {
		t.Errorf("mode shown %q", got)
	}
	if n, _ := j.tab.Locator(`[data-testid=holder-row]`).Count(); n != 2 {
		t.Fatalf("%d holder rows, want 2", n)
	}

	j.clickTo(`[data-testid=holder-row][data-holder="` + r1 + `"] [data-testid=force-unlock-button]`)
	if got := j.words(`[data-testid=confirm-summary]`); !strings.Contains(got, "keep the lock") {
		t.Errorf("confirmation summary %q does not say the other holder keeps the lock", got)
	}
	if n, _ := j.tab.Locator(`[data-testid=confirm-no-publish]`).Count(); n != 1 {
		t.Error("the confirmation does not say nothing is published")
	}
	j.fill(`[data-testid=force-unlock-reason]`, "reader 41 hung")
	j.clickTo(`[data-testid=force-unlock-confirm]`)
	if got := j.words(`[data-testid=flash]`); !strings.Contains(got, "the other holders keep it") {
		t.Errorf("flash %q", got)
	}

	m := rdb.HGetAll(ctx, name).Val()
	if len(m) != 2 || m["mode"] != "read" || m[r2] != "1" {
		t.Fatalf("Redis hash after the force-unlock: %v; want mode=read and %s only", m, r2)
	}
	if n := rdb.Exists(ctx, level(r1, "1"), level(r1, "2")).Val(); n != 0 {
		t.Errorf("%d read-level keys of the removed holder remain", n)
	}
	if n := rdb.Exists(ctx, level(r2, "1")).Val(); n != 1 {
		t.Error("the other holder's read-level key was deleted")
	}
	if pttl := rdb.PTTL(ctx, name).Val(); pttl <= 0 {
		t.Errorf("the lock lost its lease: %v", pttl)
	}
}

func TestJourneyKindsSlidingWindowLimiter(t *testing.T) {
	j := newJourney(t)
	rdb, ctx := j.rdb, j.ctx
	const name = "partner-api"
	value, permits := "{"+name+"}:value", "{"+name+"}:permits"
	// Redisson 3.34: trySetRate's config hash, the value without expiry,
	// and one grant of 4 permits (struct.pack('Bc0I', len, id, permits)).
	rdb.HSet(ctx, name, "rate", 10, "interval", 60000, "type", 0)
	now := rdb.Time(ctx).Val().UnixMilli()
	id := "0123456789abcdef"
	var n4 [4]byte
	binary.LittleEndian.PutUint32(n4[:], 4)
	rdb.Set(ctx, value, 6, 0)
	rdb.ZAdd(ctx, permits, redis.Z{Score: float64(now - 100), Member: string([]byte{byte(len(id))}) + id + string(n4[:])})

	j.open("/limiters")
	row := `[data-testid=limiter-row][data-limiter="` + name + `"]`
	if got := j.words(row + ` [data-field=kind]`); got != "redisson-rate-limiter" {
		t.Errorf("kind shown %q", got)
	}
	if got := j.words(row + ` [data-testid=rejected-hidden]`); got != "4 granted · rejections not visible" {
		t.Errorf("rejected cell %q", got)
	}
	if n, _ := j.tab.Locator(row + ` [data-field=rejected]`).Count(); n != 0 {
		t.Error("a rejected count is shown for a Redisson limiter")
	}

	j.clickTo(row + ` [data-testid=limiter-link]`)
	if got := j.words(`[data-testid=rejections-hidden]`); !strings.Contains(got, "Rejections by Redisson clients are not visible") {
		t.Errorf("notice %q", got)
	}
	if got := j.words(`[data-testid=limiter-algorithm]`); !strings.HasPrefix(got, "sliding window") {
		t.Errorf("algorithm %q", got)
	}
	keep := j.words(`[data-testid=keep-state-keep-text]`)
	if !strings.Contains(keep, "Keeps the grants") || !strings.Contains(j.words(`[data-testid=keep-state-reset-text]`), "Resets") {
		t.Errorf("the page does not say what each choice does: %q", keep)
	}
	j.fill(`[data-testid=input-rate]`, "5")
	if err := j.tab.Locator(`[data-testid=keep-state-keep]`).Check(); err != nil {
		t.Fatal(err)
	}
	j.fill(`[data-testid=input-reason]`, "e2e: fewer")
	j.clickTo(`[data-testid=limiter-save]`)
	j.clickTo(`[data-testid=limiter-confirm]`)
	if got := j.words(`[data-testid=flash]`); !strings.Contains(got, "was updated") {
		t.Fatalf("flash %q", got)
	}

	// Kept: the grant stays and the value is the new rate minus it.
	if cfg := rdb.HGetAll(ctx, name).Val(); cfg["rate"] != "5" || cfg["interval"] != "60000" || cfg["type"] != "0" {
		t.Errorf("config in Redis %v", cfg)
	}
	if v := rdb.Get(ctx, value).Val(); v != "1" {
		t.Errorf("value in Redis %q, want 1 (5 minus the 4 granted)", v)
	}
	if n := rdb.ZCard(ctx, permits).Val(); n != 1 {
		t.Errorf("%d grants in Redis, want the one kept", n)
	}
	if got := j.words(`[data-testid=limiter-available]`); got != "1" {
		t.Errorf("available shown %q after the edit", got)
	}
}

// Package audit is the console's audit trail: Redis streams the console
// appends to. A stream, not a list, because its entry IDs carry Redis'
// clock (the same clock the limiters use) and XADD trims it in the same
// command, so a trail can never grow without bound however busy the
// console is.
//
// There are two. The change trail (Key) holds what admins changed and is
// trimmed only by age (KeptFor), so nothing anyone else sends can push a
// change out of it before its retention passes. Refused and
// unauthenticated requests go to their own trail (RefusedKey), capped by
// length (Capped): a flood of them evicts only its own kind.
package audit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/lockwarden/lockwarden/luascripts"
	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Key is the default change trail. wire.Prefix keeps it out of
// discovery (wire.IsInternalKey); the braces give it a slot of its own.
const Key = wire.AuditKey

// RefusedKey is the default trail of refused requests, in the same slot
// as Key.
const RefusedKey = wire.Prefix + "audit}:refused"

// DefaultMaxLen is roughly how many records a length-capped stream
// keeps. Trimming uses "MAXLEN ~", which may keep a few more so Redis trims
// whole nodes.
const DefaultMaxLen = 10000

// DefaultRetention is how long the change trail keeps a record.
const DefaultRetention = 90 * 24 * time.Hour

// MaxRead bounds one read of the trail.
const MaxRead = 1000

// maxField bounds every text field of a record: before/after states of
// a lock with many holders, or a long reason, are cut rather than stored
// whole, so one record stays small whatever a caller passes in.
const maxField = 2048

// Outcomes of a Record.
const (
	OutcomeOK       = "ok"        // the change was made
	OutcomeDenied   = "denied"    // sign-in, role or cross-origin checks refused it
	OutcomeInvalid  = "invalid"   // bad input; nothing was changed
	OutcomeNotFound = "not-found" // no such object
	OutcomeConflict = "conflict"  // the object changed meanwhile; nothing changed
	OutcomeError    = "error"     // Redis or the server failed
	// OutcomeIntent marks the record written before a change is made;
	// the record of how it ended names it in Intent. A change whose
	// intent could not be written is not made.
	OutcomeIntent = "intent"
)

// Record is one entry of the trail: who did what to which object, what
// it looked like before and after, and how it ended.
type Record struct {
	// ID is the stream entry ID; set by Append and by reads.
	ID string `json:"id"`
	// Time is the Redis time of the append (from ID); set by reads.
	Time time.Time `json:"time"`
	// Role is the actor's role ("admin", "viewer", "" when anonymous).
	Role string `json:"role"`
	// Fingerprint identifies the token used, never the token itself (see
	// the web package: the first 8 hex digits of its SHA-256).
	Fingerprint string `json:"fingerprint"`
	Remote      string `json:"remote"`
	Action      string `json:"action"` // e.g. "force-unlock", "modify", "sign-in"
	Target      string `json:"target"` // the object name, or what was signed in to
	Before      string `json:"before"`
	After       string `json:"after"`
	Outcome     string `json:"outcome"`
	// Reason is the admin's stated reason (required for force-unlock).
	Reason string `json:"reason,omitempty"`
	// Detail is the message the client was given on failure.
	Detail    string `json:"detail,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	// Intent is the ID of the intent record an outcome record closes.
	Intent string `json:"intent,omitempty"`
}

// Trail is a handle on one audit stream, trimmed by length (maxLen) or
// by age (retention).
type Trail struct {
	rdb       redis.UniversalClient
	key       string
	maxLen    int64
	retention time.Duration
}

var auditAppendScript = store.NewScript(luascripts.Source("audit_append"))

// KeptFor returns the trail stored in rdb at key ("" is Key) that keeps
// every record for retention (<= 0 is DefaultRetention) and trims nothing
// younger, however many records arrive. The caller keeps rdb.
func KeptFor(rdb redis.UniversalClient, key string, retention time.Duration) *Trail {
	if key == "" {
		key = Key
	}
	if retention <= 0 {
		retention = DefaultRetention
	}
	return &Trail{rdb: rdb, key: key, retention: retention}
}

// Capped returns the trail stored in rdb at key ("" is Key), trimmed to
// about maxLen records (<= 0 is DefaultMaxLen). The caller keeps rdb.
func Capped(rdb redis.UniversalClient, key string, maxLen int64) *Trail {
	if key == "" {
		key = Key
	}
	if maxLen <= 0 {
		maxLen = DefaultMaxLen
	}
	return &Trail{rdb: rdb, key: key, maxLen: maxLen}
}

// Key is the stream's key.
func (a *Trail) Key() string { return a.key }

func clip(s string) string {
	if len(s) <= maxField {
		return s
	}
	// Cut on a rune boundary so the stored text stays valid UTF-8 when
	// the input was.
	cut := maxField
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// Append adds rec to the trail and returns its entry ID. One XADD both
// appends and trims, atomically: with MAXLEN ~, or with MINID ~ in
// audit_append.lua for a trail kept by age. The append is sent once: an
// unanswered one is an error, never a second record.
func (a *Trail) Append(ctx context.Context, rec Record) (string, error) {
	values := []any{
		"role", clip(rec.Role),
		"fingerprint", clip(rec.Fingerprint),
		"remote", clip(rec.Remote),
		"action", clip(rec.Action),
		"target", clip(rec.Target),
		"before", clip(rec.Before),
		"after", clip(rec.After),
		"outcome", clip(rec.Outcome),
		"reason", clip(rec.Reason),
		"detail", clip(rec.Detail),
		"request_id", clip(rec.RequestID),
		"intent", clip(rec.Intent),
	}
	if a.retention > 0 {
		id, err := auditAppendScript.Run(ctx, a.rdb, []string{a.key},
			append([]any{a.retention.Milliseconds()}, values...)...).Text()
		if err != nil {
			return "", fmt.Errorf("store: audit append: %w", err)
		}
		return id, nil
	}
	id, err := a.rdb.XAdd(ctx, &redis.XAddArgs{
		Stream: a.key,
		MaxLen: a.maxLen,
		Approx: true,
		ID:     "*",
		Values: values,
	}).Result()
	if err != nil {
		return "", fmt.Errorf("store: audit append: %w", err)
	}
	return id, nil
}

// Recent returns up to n records, newest first. n is clamped to
// [1, MaxRead].
func (a *Trail) Recent(ctx context.Context, n int) ([]Record, error) {
	recs, _, err := a.Page(ctx, "", n)
	return recs, err
}

// Page returns up to n records older than the record with ID before ("":
// the newest), newest first, and the ID to pass as before for the page
// after them ("" when no record is older). n is clamped to [1,
// MaxRead]. A before that is no stream entry ID is a
// *store.ValidationError (Field "before"); one that names no record pages
// from where it would be, so a record trimmed meanwhile loses no page.
func (a *Trail) Page(ctx context.Context, before string, n int) ([]Record, string, error) {
	n = min(max(n, 1), MaxRead)
	end := "+"
	if before != "" {
		var err error
		if end, err = idBefore(before); err != nil {
			return nil, "", err
		}
	}
	if end == "" { // before is the smallest ID: nothing is older
		return []Record{}, "", nil
	}
	// One more than asked says whether an older page exists.
	msgs, err := a.rdb.XRevRangeN(ctx, a.key, end, "-", int64(n)+1).Result()
	if re := redis.Error(nil); errors.As(err, &re) && strings.Contains(re.Error(), "WRONGTYPE") {
		return nil, "", fmt.Errorf("store: audit stream %q: %w", a.key, store.ErrWrongKind)
	}
	if err != nil {
		return nil, "", fmt.Errorf("store: audit read: %w", err)
	}
	next := ""
	if len(msgs) > n {
		msgs = msgs[:n]
		next = msgs[n-1].ID
	}
	out := make([]Record, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, auditFromMessage(m))
	}
	return out, next, nil
}

// idBefore is the largest stream entry ID below id ("<ms>-<seq>", both
// whole numbers), the inclusive end of XREVRANGE that leaves id out on
// every Redis version (the exclusive "(" form needs Redis 6.2); "" when id
// is 0-0.
func idBefore(id string) (string, error) {
	bad := &store.ValidationError{Field: "before",
		Message: "must be an audit record's id, <ms>-<seq> (e.g. 1700000000000-0), as next_before gives it"}
	msStr, seqStr, _ := strings.Cut(id, "-")
	// ParseUint takes no sign, no spaces and nothing empty.
	ms, err1 := strconv.ParseUint(msStr, 10, 64)
	seq, err2 := strconv.ParseUint(seqStr, 10, 64)
	switch {
	case err1 != nil || err2 != nil:
		return "", bad
	case seq > 0:
		return strconv.FormatUint(ms, 10) + "-" + strconv.FormatUint(seq-1, 10), nil
	case ms > 0:
		return strconv.FormatUint(ms-1, 10) + "-" + strconv.FormatUint(math.MaxUint64, 10), nil
	}
	return "", nil
}

func auditFromMessage(m redis.XMessage) Record {
	str := func(k string) string {
		s, _ := m.Values[k].(string)
		return s
	}
	return Record{
		ID:          m.ID,
		Time:        streamIDTime(m.ID),
		Role:        str("role"),
		Fingerprint: str("fingerprint"),
		Remote:      str("remote"),
		Action:      str("action"),
		Target:      str("target"),
		Before:      str("before"),
		After:       str("after"),
		Outcome:     str("outcome"),
		Reason:      str("reason"),
		Detail:      str("detail"),
		RequestID:   str("request_id"),
		Intent:      str("intent"),
	}
}

// streamIDTime is the millisecond part of a stream entry ID ("<ms>-<seq>").
func streamIDTime(id string) time.Time {
	ms, _, _ := strings.Cut(id, "-")
	v, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

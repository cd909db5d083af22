package fault

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/internal/wire"
)

// ErrorOf maps store's sentinels and Redis failures to codes once, keeps
// an *Error found anywhere in the chain as it is, and calls the rest
// internal.
func TestErrorOfMapsOnce(t *testing.T) {
	own := Invalid("rate", "rate must be at least 1")
	for _, tc := range []struct {
		err   error
		code  Code
		field string
	}{
		{own, CodeInvalid, "rate"},
		{fmt.Errorf("wrapped: %w", own), CodeInvalid, "rate"},
		{&store.ValidationError{Field: "interval_ms", Message: "must be positive"}, CodeInvalid, "interval_ms"},
		{fmt.Errorf("get: %w", wire.ErrNotFound), CodeNotFound, ""},
		{store.ErrModify, CodeNotFound, ""},
		{store.ErrWrongKind, CodeNotFound, ""},
		{ErrHolderChanged, CodeConflict, ""},
		{&store.UncertainError{Err: io.ErrUnexpectedEOF}, CodeUncertain, ""},
		{context.DeadlineExceeded, CodeUnavailable, ""},
		{fmt.Errorf("read: %w", io.EOF), CodeUnavailable, ""},
		{errors.New("boom"), CodeInternal, ""},
	} {
		e := ErrorOf(tc.err)
		if e == nil || e.Code != tc.code || e.Field != tc.field || e.Message == "" {
			t.Errorf("ErrorOf(%v) = %#v, want code %q field %q and a message", tc.err, e, tc.code, tc.field)
			continue
		}
		if !errors.As(tc.err, new(*Error)) && !errors.Is(e, tc.err) {
			t.Errorf("ErrorOf(%v) lost its cause", tc.err)
		}
	}
	if ErrorOf(nil) != nil || CodeOf(nil) != "" {
		t.Error("ErrorOf(nil) must be nil")
	}
	if e := ErrorOf(&store.ValidationError{Field: "rate", Message: "must be at least 1"}); e.Message != "rate must be at least 1" {
		t.Errorf("validation message %q, want the field and its rule", e.Message)
	}
}

// ObjectError names the object in the messages of a missing or changed
// one and leaves the other codes' messages alone.
func TestObjectErrorNamesTheObject(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code Code
		msg  string
	}{
		{wire.ErrNotFound, CodeNotFound, `no lock named "orders:42"`},
		{ErrHolderChanged, CodeConflict, `lock "orders:42" is no longer held by that holder; nothing was changed`},
		{context.DeadlineExceeded, CodeUnavailable, "Redis did not answer in time"},
	} {
		e := ErrorOf(ObjectError("lock", "orders:42", tc.err))
		if e.Code != tc.code || e.Message != tc.msg || !errors.Is(e, tc.err) {
			t.Errorf("ObjectError(%v) = %q %q, want %q %q", tc.err, e.Code, e.Message, tc.code, tc.msg)
		}
	}
	if ObjectError("lock", "x", nil) != nil {
		t.Error("ObjectError(nil) must be nil")
	}
}

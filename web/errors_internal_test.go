package web

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
)

// A Redis that goes away mid-reply surfaces as EOF or a reset, not only as a
// net.Error: all of them mean "Redis is not answering" (503), never a 500.
func TestServerRedisGoneIsUnavailable(t *testing.T) {
	for _, err := range []error{io.EOF, io.ErrUnexpectedEOF, syscall.ECONNRESET, syscall.ECONNREFUSED,
		redis.ErrClosed, redis.ErrPoolTimeout, fmt.Errorf("read: %w", io.EOF)} {
		if got := toHTTPError(err).Status; got != http.StatusServiceUnavailable {
			t.Errorf("toHTTPError(%v).Status = %d, want 503", err, got)
		}
	}
	if got := toHTTPError(fmt.Errorf("boom")).Status; got != http.StatusInternalServerError {
		t.Errorf("an unknown error must stay a 500, got %d", got)
	}
}

// A console change whose reply was lost is neither done nor failed: the
// admin is told it may have been applied (504), not "internal error".
func TestServerUncertainChangeIs504(t *testing.T) {
	err := fmt.Errorf("force-unlock: %w", &store.UncertainError{Err: io.ErrUnexpectedEOF})
	h := toHTTPError(err)
	if h.Status != http.StatusGatewayTimeout || !strings.Contains(h.Message, "may or may not") {
		t.Errorf("toHTTPError(uncertain) = %d %q, want 504 saying the outcome is unknown", h.Status, h.Message)
	}
}

// Every console error code has its one status, and what a handler
// returns is answered by its code whatever wraps it: the message and the
// field are the ones the error carries, and a lost race's holders come
// along.
func TestServerMapsCodesToStatuses(t *testing.T) {
	want := map[inspect.Code]int{
		inspect.CodeInvalid: 400, inspect.CodeUnauthorized: 401, inspect.CodeForbidden: 403, inspect.CodeNotFound: 404,
		inspect.CodeConflict: 409, inspect.CodeUnsupported: 422, inspect.CodeLimited: 429, inspect.CodeInternal: 500,
		inspect.CodeUnavailable: 503, inspect.CodeUncertain: 504,
	}
	if len(statusOf) != len(want) {
		t.Errorf("statusOf has %d codes, want %d", len(statusOf), len(want))
	}
	for code, status := range want {
		err := fmt.Errorf("handler: %w", &inspect.Error{Code: code, Field: "f", Message: "m"})
		if h := toHTTPError(err); h.Status != status || h.Message != "m" || h.Field != "f" {
			t.Errorf("code %q: %d %q %q, want %d", code, h.Status, h.Message, h.Field, status)
		}
	}
	held := withHolders(inspect.ObjectError("lock", "l", inspect.ErrHolderChanged), []inspect.Holder{{ID: "h"}})
	if h := toHTTPError(held); h.Status != 409 || len(h.Holders) != 1 || h.Holders[0].ID != "h" {
		t.Errorf("a lost race: %d, holders %+v; want 409 with the holder", h.Status, h.Holders)
	}
}

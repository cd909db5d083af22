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

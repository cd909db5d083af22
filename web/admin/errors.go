package admin

import (
	"errors"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// Every action's error is an *inspect.Error: CodeInvalid for input refused
// before Redis was touched, CodeNotFound and CodeConflict (inspect's
// ObjectError) for a named object that is missing or changed,
// CodeUnavailable when the intent could not be audited; store's errors
// are mapped by inspect.ErrorOf.

// ErrAuditUnavailable is the cause of a change not made because its
// intent record could not be written.
var ErrAuditUnavailable = errors.New("admin: the audit trail cannot be written; nothing was changed")

// outcomeOf is the audit outcome of an action's error.
func outcomeOf(err error) string {
	switch inspect.CodeOf(err) {
	case "":
		return inspect.OutcomeOK
	case inspect.CodeInvalid:
		return inspect.OutcomeInvalid
	case inspect.CodeConflict:
		return inspect.OutcomeConflict
	case inspect.CodeNotFound:
		return inspect.OutcomeNotFound
	}
	return inspect.OutcomeError
}

// detailOf is what an audit record keeps of an action's error: what the
// client was told, and for a failure that is not the client's the cause.
func detailOf(err error) string {
	e := inspect.ErrorOf(err)
	switch {
	case e == nil:
		return ""
	case e.Code == inspect.CodeInvalid || e.Code == inspect.CodeNotFound || e.Code == inspect.CodeConflict:
		return e.Message
	}
	return e.Error()
}

package admin

import (
	"errors"
	"fmt"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
)

// InputError is a request the action refused before touching Redis.
type InputError struct {
	Field   string // the request field at fault
	Message string // what is wrong, for the client
}

func (e *InputError) Error() string { return e.Message }

func invalid(field, msg string) *InputError { return &InputError{Field: field, Message: msg} }

// ObjectError is an action that failed on a named object: it is gone, is
// another kind, or (ErrHolderChanged) is no longer held as the admin saw.
type ObjectError struct {
	What string // "lock", "limiter", "counter"
	Name string
	// Holders are a lock's holders after a lost race (ErrHolderChanged).
	Holders []inspect.Holder
	Err     error
}

func (e *ObjectError) Error() string {
	switch {
	case Missing(e.Err):
		return fmt.Sprintf("no %s named %q", e.What, e.Name)
	case errors.Is(e.Err, inspect.ErrHolderChanged):
		return fmt.Sprintf("%s %q is no longer held by that holder; nothing was changed", e.What, e.Name)
	}
	return fmt.Sprintf("%s %q: %v", e.What, e.Name, e.Err)
}

func (e *ObjectError) Unwrap() error { return e.Err }

// Missing: err says the object is not there as the action's kind.
func Missing(err error) bool {
	return errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrModify) || errors.Is(err, store.ErrWrongKind)
}

// outcomeOf is the audit outcome of an action's error.
func outcomeOf(err error) string {
	var ie *InputError
	var ve *store.ValidationError
	switch {
	case err == nil:
		return inspect.OutcomeOK
	case errors.As(err, &ie), errors.As(err, &ve):
		return inspect.OutcomeInvalid
	case errors.Is(err, inspect.ErrHolderChanged):
		return inspect.OutcomeConflict
	case Missing(err):
		return inspect.OutcomeNotFound
	}
	return inspect.OutcomeError
}

// detailOf is the message an audit record keeps of an action's error.
func detailOf(err error) string {
	var ve *store.ValidationError
	if errors.As(err, &ve) {
		return ve.Field + " " + ve.Message
	}
	if err == nil {
		return ""
	}
	return err.Error()
}

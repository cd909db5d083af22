package inspect

import "github.com/lockwarden/lockwarden/store/inspect/fault"

// The console's one error type is package fault's; these names keep it
// reachable where the Inspector's callers already look.
type (
	Code  = fault.Code
	Error = fault.Error
)

const (
	CodeInternal     = fault.CodeInternal
	CodeInvalid      = fault.CodeInvalid
	CodeUnauthorized = fault.CodeUnauthorized
	CodeForbidden    = fault.CodeForbidden
	CodeNotFound     = fault.CodeNotFound
	CodeConflict     = fault.CodeConflict
	CodeUnsupported  = fault.CodeUnsupported
	CodeLimited      = fault.CodeLimited
	CodeUnavailable  = fault.CodeUnavailable
	CodeUncertain    = fault.CodeUncertain
)

// Errorf is fault.Errorf.
func Errorf(code Code, format string, args ...any) *Error { return fault.Errorf(code, format, args...) }

// Invalid is fault.Invalid.
func Invalid(field, message string) *Error { return fault.Invalid(field, message) }

// ErrorOf is fault.ErrorOf.
func ErrorOf(err error) *Error { return fault.ErrorOf(err) }

// CodeOf is fault.CodeOf.
func CodeOf(err error) Code { return fault.CodeOf(err) }

// ObjectError is fault.ObjectError.
func ObjectError(what, name string, err error) error { return fault.ObjectError(what, name, err) }

// RedisUnreachable is fault.RedisUnreachable.
func RedisUnreachable(err error) bool { return fault.RedisUnreachable(err) }

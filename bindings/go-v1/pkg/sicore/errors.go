// Code generated from bindings/go/errors.go by go generate (internal/shared/gen); DO NOT EDIT.

//go:build cgo

package sicore

import "fmt"

// Status is a library status code (the C enum sicore_status). Every error
// returned by this package is an *Error carrying one.
type Status int32

// The status codes of the C ABI, with the same numeric values.
const (
	// StatusOK is success; it never appears in an *Error.
	StatusOK Status = 0
	// StatusInvalidArgument: a null pointer, bad UTF-8, or a missing
	// required field (for example an empty rmID or applicationID).
	StatusInvalidArgument Status = 1
	// StatusDecodeError: the bytes are not a valid encoding of the
	// expected message.
	StatusDecodeError Status = 2
	// StatusRejected: understood and refused, for example a bad
	// configuration or an unknown rmID.
	StatusRejected Status = 3
	// StatusStopped: the scheduler is shutting down or closed.
	StatusStopped Status = 4
	// StatusWouldDeadlock: a synchronous call (RegisterResourceManager,
	// UpdateConfiguration, StateDump, Close) made from inside a callback.
	StatusWouldDeadlock Status = 5
	// StatusInternal: a bug; the library caught a panic at its boundary.
	StatusInternal Status = 6
)

// String returns the status name, for example "rejected".
func (s Status) String() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusInvalidArgument:
		return "invalid argument"
	case StatusDecodeError:
		return "decode error"
	case StatusRejected:
		return "rejected"
	case StatusStopped:
		return "stopped"
	case StatusWouldDeadlock:
		return "would deadlock"
	case StatusInternal:
		return "internal error"
	default:
		return fmt.Sprintf("status %d", int32(s))
	}
}

// Error is a failed call: the library's status code, the operation that
// failed and the library's message (what was wrong, and where).
//
// Compare the kind of failure with errors.Is against the sentinel values
// (errors.Is(err, sicore.ErrRejected)); get at the message with errors.As.
type Error struct {
	// Status is the library's status code; never StatusOK.
	Status Status
	// Op is the SchedulerAPI method or library call that failed, for
	// example "UpdateAllocation". Empty in the sentinel values.
	Op string
	// Message is the library's explanation. Empty in the sentinel values.
	Message string
}

// Error formats the error as "sicore: <op>: <status>: <message>".
func (e *Error) Error() string {
	s := "sicore: "
	if e.Op != "" {
		s += e.Op + ": "
	}
	s += e.Status.String()
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Is reports whether target is the sentinel for e's status, so that
// errors.Is(err, ErrRejected) holds for every rejected call whatever its
// message. Two full errors match only when all their fields are equal.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok || t.Status != e.Status {
		return false
	}
	if t.Op == "" && t.Message == "" {
		return true
	}
	return t.Op == e.Op && t.Message == e.Message
}

// Sentinel errors, one per status, for use with errors.Is.
var (
	// ErrInvalidArgument matches errors with StatusInvalidArgument.
	ErrInvalidArgument = &Error{Status: StatusInvalidArgument}
	// ErrDecode matches errors with StatusDecodeError.
	ErrDecode = &Error{Status: StatusDecodeError}
	// ErrRejected matches errors with StatusRejected.
	ErrRejected = &Error{Status: StatusRejected}
	// ErrStopped matches errors with StatusStopped, including every call
	// made on a closed Scheduler.
	ErrStopped = &Error{Status: StatusStopped}
	// ErrWouldDeadlock matches errors with StatusWouldDeadlock.
	ErrWouldDeadlock = &Error{Status: StatusWouldDeadlock}
	// ErrInternal matches errors with StatusInternal.
	ErrInternal = &Error{Status: StatusInternal}
)

func newError(op string, st Status, msg string) *Error {
	return &Error{Status: st, Op: op, Message: msg}
}

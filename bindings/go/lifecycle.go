// The edition-neutral part of Scheduler: entering and leaving the
// library, the calls that do not depend on the SI edition (StateDump,
// Metrics, RESTAddress, Version), the refusal of waiting calls from inside
// callbacks, and Close. scheduler.go has the type, New and the SI calls.

package sicore

/*
#include <stdint.h>
#include "sicore.h"
*/
import "C"

import (
	"unsafe"
)

// Version returns the version of the linked sicore library.
func Version() string {
	return C.GoString(C.sicore_version())
}

// StatusName is the library's own name of a status code, as the C
// function sicore_status_str gives it (for example "SICORE_REJECTED"),
// for logs next to the library's messages; a value the library does not
// know gives "unknown sicore_status".
func StatusName(s Status) string {
	return C.GoString(C.sicore_status_str(C.int(s)))
}

// enter marks the start of a call into the library; it fails once Close
// has begun, so the library pointer is never used after it is freed.
func (s *Scheduler) enter(op string) (*C.sicore_scheduler, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return nil, newError(op, StatusStopped, "the scheduler is closed")
	}
	s.inflight++
	return s.ptr, nil
}

// leave marks the end of a call started with enter.
func (s *Scheduler) leave() {
	s.mu.Lock()
	s.inflight--
	if s.inflight == 0 {
		s.idle.Broadcast()
	}
	s.mu.Unlock()
}

func (s *Scheduler) remember(r *registration) {
	s.mu.Lock()
	s.regs[r] = struct{}{}
	s.mu.Unlock()
}

func (s *Scheduler) forget(r *registration) {
	s.mu.Lock()
	delete(s.regs, r)
	s.mu.Unlock()
}

// StateDump returns the scheduler's state as JSON: partitions with their
// queue tree, applications and nodes (field names are documented in the
// project's docs/rest-and-metrics.md, "State dump").
func (s *Scheduler) StateDump() ([]byte, error) {
	const op = "StateDump"
	if err := refuseInCallback(op); err != nil {
		return nil, err
	}
	p, err := s.enter(op)
	if err != nil {
		return nil, err
	}
	defer s.leave()
	var jsonBuf, errBuf C.sicore_buffer
	st := C.sicore_state_dump(p, &jsonBuf, &errBuf)
	if st != C.SICORE_OK {
		return nil, takeError(op, st, &errBuf)
	}
	return takeBuffer(&jsonBuf), nil
}

// Metrics returns the Prometheus text exposition of the yunikorn_*
// metrics (Prometheus text format 0.0.4), for an RM that
// serves /metrics itself. It never waits for the scheduling thread, so it
// may be called from inside a callback.
func (s *Scheduler) Metrics() (string, error) {
	const op = "Metrics"
	p, err := s.enter(op)
	if err != nil {
		return "", err
	}
	defer s.leave()
	var textBuf, errBuf C.sicore_buffer
	st := C.sicore_metrics(p, &textBuf, &errBuf)
	if st != C.SICORE_OK {
		return "", takeError(op, st, &errBuf)
	}
	return string(takeBuffer(&textBuf)), nil
}

// RESTAddress returns the host:port the REST service listens on (useful
// with port 0 in WithRESTAddress), or "" when it was not started.
func (s *Scheduler) RESTAddress() (string, error) {
	const op = "RESTAddress"
	p, err := s.enter(op)
	if err != nil {
		return "", err
	}
	defer s.leave()
	var addrBuf, errBuf C.sicore_buffer
	st := C.sicore_rest_address(p, &addrBuf, &errBuf)
	if st != C.SICORE_OK {
		return "", takeError(op, st, &errBuf)
	}
	return string(takeBuffer(&addrBuf)), nil
}

// inOwnCallback reports whether the caller runs inside one of s's
// callbacks (the trampolines note the running registration per thread).
func (s *Scheduler) inOwnCallback() bool {
	h := handle(currentHandle())
	if h == 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for r := range s.regs {
		if r.handle == h {
			return true
		}
	}
	return false
}

// inAnyCallback reports whether the caller runs inside a callback of any
// Scheduler of this process, or inside the library's log handler.
func inAnyCallback() bool {
	return currentHandle() != 0
}

// refuseInCallback refuses a call that waits for the library's threads
// when it comes from inside a callback. The library refuses such calls
// from its own threads; a guarded callback runs on a goroutine of its own
// thread (see WithGoexitGuard), where only the binding can tell.
func refuseInCallback(op string) error {
	if inAnyCallback() {
		return newError(op, StatusWouldDeadlock,
			op+" cannot be called from inside a callback or log handler: it waits for the scheduler's threads")
	}
	return nil
}

// Close stops the scheduler: pending work is abandoned, the library's
// threads are joined and every callback registration is released. When
// Close returns nil no callback is running or will run again, and every
// later call returns an error matching ErrStopped. Calls already in
// progress finish first. Closing twice is a no-op.
//
// Close must not be called from inside a callback, of this scheduler or
// of any other (stopping a scheduler joins its threads, and the thread
// running the callback may be one of them, or be waited for by one): it
// then returns an error matching ErrWouldDeadlock, stops and frees
// nothing, and the scheduler keeps running, so a later Close from another
// goroutine stops it. The same holds when the library refuses to stop it
// (for instance from a log handler running on a library thread): the
// library's reason is returned.
func (s *Scheduler) Close() error {
	const op = "Close"
	if s.inOwnCallback() {
		return newError(op, StatusWouldDeadlock,
			"Close cannot be called from inside a callback of the same scheduler; it keeps running")
	}
	if inAnyCallback() {
		return newError(op, StatusWouldDeadlock,
			"Close cannot be called from inside a callback of another scheduler (or a log handler); it keeps running")
	}
	// One Close at a time: a second waits for the first's outcome, and
	// tries again itself if the first was refused.
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	s.mu.Lock()
	if s.ptr == nil {
		s.mu.Unlock()
		return nil
	}
	s.closing = true
	for s.inflight > 0 {
		s.idle.Wait()
	}
	p := s.ptr
	s.mu.Unlock()

	// sicore_shutdown reports a refusal, which sicore_free could only log;
	// once it succeeded, sicore_free just releases the memory.
	var errBuf C.sicore_buffer
	if st := C.sicore_shutdown(p, &errBuf); st != C.SICORE_OK {
		err := takeError(op, st, &errBuf)
		s.mu.Lock()
		s.closing = false
		s.mu.Unlock()
		return err
	}
	s.mu.Lock()
	s.ptr = nil
	s.mu.Unlock()
	C.sicore_free(p)

	// The library owns every table it was given and has called release
	// for each by now. Anything left is a library bug; free it anyway so
	// no handle outlives the scheduler (tests check this never happens).
	s.mu.Lock()
	left := make([]*registration, 0, len(s.regs))
	for r := range s.regs {
		left = append(left, r)
	}
	s.mu.Unlock()
	for _, r := range left {
		unreleased.Add(1)
		r.free()
	}
	return nil
}

// bytePtr returns a pointer to b's bytes for a borrowed C argument. An
// empty slice maps to a valid, non-NULL pointer with length 0: the library
// refuses NULL message buffers.
func bytePtr(b []byte) *C.uint8_t {
	if len(b) == 0 {
		return (*C.uint8_t)(unsafe.Pointer(&emptyBytes[0]))
	}
	return (*C.uint8_t)(unsafe.Pointer(unsafe.SliceData(b)))
}

var emptyBytes [1]byte

// takeBuffer copies a library-owned buffer into Go memory and frees it.
func takeBuffer(buf *C.sicore_buffer) []byte {
	if buf.data == nil {
		return nil
	}
	b := C.GoBytes(unsafe.Pointer(buf.data), C.int(buf.len))
	C.sicore_buffer_free(*buf)
	buf.data, buf.len = nil, 0
	return b
}

// takeError turns a failed status and its message buffer into an *Error.
func takeError(op string, st C.enum_sicore_status, buf *C.sicore_buffer) error {
	return newError(op, Status(st), string(takeBuffer(buf)))
}

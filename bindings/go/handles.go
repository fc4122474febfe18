// The edition-neutral half of the callbacks: the handle table that the
// library's user_data values index, the registration behind a handle, and
// the way an RM's callback is run (decoded, called, its error, panic or
// Goexit turned into the library's answer). callbacks.go has the exported
// functions of the edition's callback table.

package sicore

/*
#include <stdint.h>
#include "sicore.h"
*/
import "C"

import (
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"unsafe"
)

// liveHandles counts the handles of callback registrations that the
// library still holds; tests check it drops back after Close.
var liveHandles atomic.Int64

// unreleased counts registrations whose handle Close had to delete because
// the library never called release for them; it stays 0 unless the
// library breaks its contract.
var unreleased atomic.Int64

// handle is the user_data of a callback table: which registration the
// library calls back. The low 32 bits are the registration's slot in
// handles plus one, the bits above a sequence number, so a stale value
// never finds the slot's next occupant. On 64-bit platforms the top bit is
// always set: user_data is a pointer field of a table that goes through a
// cgo call, and cgo's pointer check panics on a value inside Go's heap.
// Without that bit the 192nd registration's handle, 0xc0_0000_0001, is an
// address in the first heap arena.
type handle uintptr

// handleTag is the top bit of every 64-bit handle; no user-space address
// has it.
const handleTag = uint64(1) << 63

// handles holds the live registrations by slot. Callbacks only read it: a
// copy-on-write slice behind an atomic pointer, where runtime/cgo.Handle
// (a sync.Map) cost a hash lookup on each of the two or three callbacks
// per allocation. Registering and releasing, which are rare, copy it.
var handles struct {
	mu    sync.Mutex
	slots atomic.Pointer[[]*registration]
	free  []int
	seq   uint32
}

func newHandle(r *registration) handle {
	handles.mu.Lock()
	defer handles.mu.Unlock()
	var old []*registration
	if p := handles.slots.Load(); p != nil {
		old = *p
	}
	slots := append([]*registration(nil), old...)
	i := len(slots)
	if n := len(handles.free); n > 0 {
		i, handles.free = handles.free[n-1], handles.free[:n-1]
	} else {
		slots = append(slots, nil)
	}
	slots[i] = r
	handles.seq = (handles.seq + 1) &^ (1 << 31)
	handles.slots.Store(&slots)
	// On a 32-bit platform the conversion keeps only the slot, never an
	// address either (Go's heap does not start in the first pages).
	return handle(handleTag | uint64(handles.seq)<<32 | uint64(i+1))
}

func (h handle) delete() {
	handles.mu.Lock()
	defer handles.mu.Unlock()
	i := int(uint32(h)) - 1
	old := *handles.slots.Load()
	slots := append([]*registration(nil), old...)
	slots[i] = nil
	handles.free = append(handles.free, i)
	handles.slots.Store(&slots)
}

// registration is what one callback table's user_data points to: the
// RM's callback object and where to log. Its handle is deleted when the
// library calls release, or at the latest when the Scheduler closes.
type registration struct {
	cb      rmCallback
	logger  *slog.Logger
	owner   *Scheduler
	handle  handle
	guarded bool // run the RM's code through guarded (WithGoexitGuard)
	once    sync.Once
}

func newRegistration(s *Scheduler, cb rmCallback) *registration {
	r := &registration{cb: cb, logger: s.logger, owner: s, guarded: s.guarded}
	r.handle = newHandle(r)
	liveHandles.Add(1)
	return r
}

// free deletes the handle; safe to call more than once.
func (r *registration) free() {
	r.once.Do(func() {
		r.owner.forget(r)
		r.handle.delete()
		liveHandles.Add(-1)
	})
}

// lookup returns the registration behind a user_data value. A value that
// is no live registration's panics, as the callers expect of a bad handle
// (they recover and report it).
func lookup(h uintptr) *registration {
	if p := handles.slots.Load(); p != nil {
		if i := int(uint32(h)) - 1; i >= 0 && i < len(*p) {
			if r := (*p)[i]; r != nil && r.handle == handle(h) {
				return r
			}
		}
	}
	panic(fmt.Sprintf("sicore Go binding: callback with an unknown user_data %#x", h))
}

// borrowed views a message the library lends for the duration of a
// callback. proto.Unmarshal copies what it keeps, so nothing aliases it
// after the callback returns.
func borrowed(msg *C.uint8_t, n C.size_t) []byte {
	if msg == nil || n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(msg)), int(n))
}

// setReply hands bytes to the library as a callback's answer; the library
// copies them before sicore_reply_set returns.
func setReply(reply *C.sicore_reply, b []byte) {
	if reply == nil {
		return
	}
	var p *C.uint8_t
	if len(b) > 0 {
		p = (*C.uint8_t)(unsafe.Pointer(unsafe.SliceData(b)))
	}
	C.sicore_reply_set(reply, p, C.size_t(len(b)))
}

// loggerOf returns the registration's logger, or the default one when the
// handle itself is bad.
func loggerOf(r *registration) *slog.Logger {
	if r != nil && r.logger != nil {
		return r.logger
	}
	return slog.Default()
}

// statusCall runs one status callback: decode the message, call, and
// turn an error or a panic into a non-zero return with the reason in
// reply. No panic leaves this function, so none unwinds into the library.
func statusCall[M any](h C.uintptr_t, method string, msg *C.uint8_t, n C.size_t, reply *C.sicore_reply,
	decode func([]byte) (M, error), call func(rmCallback, M) error) C.int32_t {
	rc, reason := runStatus(uintptr(h), method, borrowed(msg, n), decode, call)
	if rc != 0 {
		setReply(reply, reason)
	}
	return C.int32_t(rc)
}

// runStatus is the Go side of statusCall: it returns 0, or 1 and the
// reason for the library.
func runStatus[M any](h uintptr, method string, msg []byte, decode func([]byte) (M, error),
	call func(rmCallback, M) error) (rc int32, reason []byte) {
	var r *registration
	defer func() {
		// The binding's own code (a bad handle); the RM's code is run
		// by r.run, which recovers its panics itself.
		if p := recover(); p != nil {
			logPanic(r, method, p)
			rc, reason = 1, []byte(fmt.Sprintf("panic in ResourceManagerCallback.%s: %v", method, p))
		}
	}()
	r = lookup(h)
	m, err := decode(msg)
	if err != nil {
		return 1, []byte(fmt.Sprintf("sicore Go binding: cannot decode the %s message: %v", method, err))
	}
	cbErr, failure := runCall(r, method, call, m)
	if failure != "" {
		return 1, []byte(failure)
	}
	if cbErr != nil {
		text := cbErr.Error()
		if text == "" {
			text = fmt.Sprintf("ResourceManagerCallback.%s returned an error", method)
		}
		return 1, []byte(text)
	}
	return 0, nil
}

// run calls fn, the RM's code of one callback, and returns "" when fn
// returned, else the failure to hand to the library: a panic (recovered
// and logged) or runtime.Goexit (logged).
//
// Goexit (t.FailNow, t.Fatal, t.SkipNow) cannot be stopped: the deferred
// functions run and the goroutine ends. On a library thread that goroutine
// is the one the thread entered Go with, and the runtime then ends the
// process ("Goexit called in a thread that was not created by the Go
// runtime"). So a guarded registration runs fn on a fresh goroutine and
// waits for it: a Goexit ends only that goroutine, and its deferred check
// reports it. Without the guard (WithGoexitGuard(false), the default
// outside tests) fn runs here, and only panics are survivable; a Goexit
// is still logged before the runtime ends the process.
func (r *registration) run(method string, fn func()) string {
	if !r.guarded {
		return runHere(r, method, fn)
	}
	return guarded(r, r.handle, method, fn)
}

// runCall is r.run(method, func() { err = call(r.cb, m) }) without the
// closure: a closure that guarded may hand to another goroutine escapes,
// and with it every variable it captures, which cost three heap
// allocations per status callback (two or more per allocation). The
// unguarded path calls straight through; the guarded one builds its
// closure in guardedCall.
func runCall[M any](r *registration, method string, call func(rmCallback, M) error, m M) (err error, failure string) {
	if r.guarded {
		return guardedCall(r, method, call, m)
	}
	returned := false
	defer func() {
		if !returned {
			failure = callbackFailure(r, method, recover())
		}
	}()
	err = call(r.cb, m)
	returned = true
	return err, ""
}

// guardedCall is runCall's guarded path; see run.
func guardedCall[M any](r *registration, method string, call func(rmCallback, M) error, m M) (error, string) {
	var err error
	failure := guarded(r, r.handle, method, func() { err = call(r.cb, m) })
	return err, failure
}

// runHere calls fn on the calling goroutine; see run.
func runHere(r *registration, method string, fn func()) (failure string) {
	returned := false
	defer func() {
		if !returned {
			failure = callbackFailure(r, method, recover())
		}
	}()
	fn()
	returned = true
	return ""
}

// guarded runs fn on a goroutine of its own and waits for it; see run.
// The goroutine keeps one thread for the call and marks it as inside the
// callback of h, as the C trampolines mark a library thread, so that a
// call back into the binding from fn is refused or allowed exactly as on
// the library's thread.
func guarded(r *registration, h handle, method string, fn func()) string {
	done := make(chan string, 1)
	go func() {
		runtime.LockOSThread()
		setCurrentHandle(uintptr(h))
		returned := false
		defer func() {
			setCurrentHandle(0)
			runtime.UnlockOSThread()
			if returned {
				done <- ""
				return
			}
			done <- callbackFailure(r, method, recover())
		}()
		fn()
		returned = true
	}()
	return <-done
}

// callbackFailure logs why the RM's code of a callback did not return:
// p is the recovered panic value, nil for runtime.Goexit (since Go 1.21
// panic(nil) recovers as a *runtime.PanicNilError). It returns the reason
// for the library.
func callbackFailure(r *registration, method string, p any) string {
	if p != nil {
		logPanic(r, method, p)
		return fmt.Sprintf("panic in ResourceManagerCallback.%s: %v", method, p)
	}
	loggerOf(r).Error("sicore: a resource manager callback called runtime.Goexit",
		"method", method, "stack", string(debug.Stack()))
	return fmt.Sprintf("ResourceManagerCallback.%s called runtime.Goexit (t.FailNow, t.Fatal or t.SkipNow "+
		"outside the test goroutine?)", method)
}

// notifyCall runs a callback that reports nothing back; errors, panics
// and Goexit are logged.
func notifyCall(h uintptr, method string, call func(*registration) error) {
	var r *registration
	defer func() {
		if p := recover(); p != nil {
			logPanic(r, method, p)
		}
	}()
	r = lookup(h)
	var err error
	if failure := r.run(method, func() { err = call(r) }); failure != "" {
		return
	}
	if err != nil {
		loggerOf(r).Error("sicore: cannot deliver a callback", "method", method, "error", err)
	}
}

func logPanic(r *registration, method string, p any) {
	loggerOf(r).Error("sicore: recovered a panic in a resource manager callback",
		"method", method, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
}

package sicore

/*
#include <stdint.h>
#include "sicore.h"
void sicore_v1go_set_current_handle(uintptr_t h);
*/
import "C"

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/apache/yunikorn-scheduler-interface/lib/go/api"
	"github.com/apache/yunikorn-scheduler-interface/lib/go/si"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
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
// handles plus one, the high bits a sequence number, so a stale value
// never finds the slot's next occupant.
type handle uintptr

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
	handles.seq++
	handles.slots.Store(&slots)
	return handle(uint64(handles.seq)<<32 | uint64(i+1))
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
	cb      api.ResourceManagerCallback
	logger  *slog.Logger
	owner   *Scheduler
	handle  handle
	guarded bool // run the RM's code through guarded (WithGoexitGuard)
	once    sync.Once
}

func newRegistration(s *Scheduler, cb api.ResourceManagerCallback) *registration {
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
	decode func([]byte) (M, error), call func(api.ResourceManagerCallback, M) error) C.int32_t {
	rc, reason := runStatus(uintptr(h), method, borrowed(msg, n), decode, call)
	if rc != 0 {
		setReply(reply, reason)
	}
	return C.int32_t(rc)
}

// runStatus is the Go side of statusCall: it returns 0, or 1 and the
// reason for the library.
func runStatus[M any](h uintptr, method string, msg []byte, decode func([]byte) (M, error),
	call func(api.ResourceManagerCallback, M) error) (rc int32, reason []byte) {
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
	var cbErr error
	if failure := r.run(method, func() { cbErr = call(r.cb, m) }); failure != "" {
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
		C.sicore_v1go_set_current_handle(C.uintptr_t(h))
		returned := false
		defer func() {
			C.sicore_v1go_set_current_handle(0)
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

// unmarshal decodes a message with proto.Unmarshal; the messages that are
// not sent per allocation take this path (decode.go has the others).
func unmarshal[M any, P interface {
	*M
	proto.Message
}](b []byte) (P, error) {
	m := P(new(M))
	if err := proto.Unmarshal(b, m); err != nil {
		return nil, err
	}
	return m, nil
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

//export sicoreV1GoUpdateAllocation
func sicoreV1GoUpdateAllocation(h C.uintptr_t, msg *C.uint8_t, n C.size_t, reply *C.sicore_reply) C.int32_t {
	return statusCall(h, "UpdateAllocation", msg, n, reply, decodeAllocationResponse,
		api.ResourceManagerCallback.UpdateAllocation)
}

//export sicoreV1GoUpdateApplication
func sicoreV1GoUpdateApplication(h C.uintptr_t, msg *C.uint8_t, n C.size_t, reply *C.sicore_reply) C.int32_t {
	return statusCall(h, "UpdateApplication", msg, n, reply, unmarshal[si.ApplicationResponse],
		api.ResourceManagerCallback.UpdateApplication)
}

//export sicoreV1GoUpdateNode
func sicoreV1GoUpdateNode(h C.uintptr_t, msg *C.uint8_t, n C.size_t, reply *C.sicore_reply) C.int32_t {
	return statusCall(h, "UpdateNode", msg, n, reply, unmarshal[si.NodeResponse],
		api.ResourceManagerCallback.UpdateNode)
}

//export sicoreV1GoPredicates
func sicoreV1GoPredicates(h C.uintptr_t, msg *C.uint8_t, n C.size_t, reply *C.sicore_reply) C.int32_t {
	return statusCall(h, "Predicates", msg, n, reply, decodePredicatesArgs,
		api.ResourceManagerCallback.Predicates)
}

//export sicoreV1GoPreemptionPredicates
func sicoreV1GoPreemptionPredicates(h C.uintptr_t, msg *C.uint8_t, n C.size_t, reply *C.sicore_reply) {
	setReply(reply, preemptionAnswer(uintptr(h), borrowed(msg, n)))
}

// preemptionAnswer runs PreemptionPredicates and returns the encoded
// si.PreemptionPredicatesResponse for the library. A nil response, a
// decoding failure or a panic becomes {success: false, index: -1}, the
// RM's own "does not fit" answer, and is logged.
func preemptionAnswer(h uintptr, msg []byte) (answer []byte) {
	const method = "PreemptionPredicates"
	failed := func() []byte {
		b, _ := proto.Marshal(&si.PreemptionPredicatesResponse{Success: false, Index: -1})
		return b
	}
	var r *registration
	defer func() {
		if p := recover(); p != nil {
			logPanic(r, method, p)
			answer = failed()
		}
	}()
	r = lookup(h)
	args := new(si.PreemptionPredicatesArgs)
	if err := proto.Unmarshal(msg, args); err != nil {
		loggerOf(r).Error("sicore: cannot decode the PreemptionPredicatesArgs", "error", err)
		return failed()
	}
	var resp *si.PreemptionPredicatesResponse
	if failure := r.run(method, func() { resp = r.cb.PreemptionPredicates(args) }); failure != "" {
		return failed()
	}
	if resp == nil {
		loggerOf(r).Error("sicore: ResourceManagerCallback.PreemptionPredicates returned nil")
		return failed()
	}
	b, err := proto.Marshal(resp)
	if err != nil {
		loggerOf(r).Error("sicore: cannot encode the PreemptionPredicatesResponse", "error", err)
		return failed()
	}
	return b
}

//export sicoreV1GoSendEvent
func sicoreV1GoSendEvent(h C.uintptr_t, msg *C.uint8_t, n C.size_t) {
	notifyCall(uintptr(h), "SendEvent", func(r *registration) error {
		events, err := decodeEventRecords(borrowed(msg, n))
		if err != nil {
			return err
		}
		if len(events) > 0 {
			r.cb.SendEvent(events)
		}
		return nil
	})
}

//export sicoreV1GoUpdateContainerSchedulingState
func sicoreV1GoUpdateContainerSchedulingState(h C.uintptr_t, msg *C.uint8_t, n C.size_t) {
	notifyCall(uintptr(h), "UpdateContainerSchedulingState", func(r *registration) error {
		m := new(si.UpdateContainerSchedulingStateRequest)
		if err := proto.Unmarshal(borrowed(msg, n), m); err != nil {
			return fmt.Errorf("cannot decode the UpdateContainerSchedulingStateRequest: %w", err)
		}
		r.cb.UpdateContainerSchedulingState(m)
		return nil
	})
}

//export sicoreV1GoGetStateDump
func sicoreV1GoGetStateDump(h C.uintptr_t, reply *C.sicore_reply) {
	if dump, ok := stateDumpAnswer(uintptr(h)); ok {
		setReply(reply, dump)
	}
}

// stateDumpAnswer asks the RM's api.StateDumpPlugin for its JSON. The
// slot is only filled for an RM that implements the plugin; an error, a
// panic or text that is not JSON leaves the reply unset (the library then
// includes no RM dump) and is logged.
func stateDumpAnswer(h uintptr) (dump []byte, ok bool) {
	const method = "GetStateDump"
	var r *registration
	defer func() {
		if p := recover(); p != nil {
			logPanic(r, method, p)
			dump, ok = nil, false
		}
	}()
	r = lookup(h)
	plugin, is := r.cb.(api.StateDumpPlugin)
	if !is {
		return nil, false
	}
	var text string
	var err error
	if failure := r.run(method, func() { text, err = plugin.GetStateDump() }); failure != "" {
		return nil, false
	}
	if err != nil {
		loggerOf(r).Error("sicore: StateDumpPlugin.GetStateDump failed", "error", err)
		return nil, false
	}
	if !json.Valid([]byte(text)) {
		loggerOf(r).Error("sicore: StateDumpPlugin.GetStateDump returned text that is not JSON")
		return nil, false
	}
	return []byte(text), true
}

//export sicoreV1GoRelease
func sicoreV1GoRelease(h C.uintptr_t) {
	defer func() {
		if p := recover(); p != nil {
			slog.Default().Error("sicore: bad handle in release", "panic", fmt.Sprint(p))
		}
	}()
	lookup(uintptr(h)).free()
}

// decodeEventRecords decodes the library's EventRecords batch message, which is
// `repeated si.v1.EventRecord events = 1`. Rather than generate code for
// a one-field wrapper, it walks the wire format with protowire and hands
// each field-1 payload to proto.Unmarshal as an si.EventRecord; other
// fields, which a later library version might add, are skipped.
func decodeEventRecords(b []byte) ([]*si.EventRecord, error) {
	var events []*si.EventRecord
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, fmt.Errorf("cannot decode EventRecords: %w", protowire.ParseError(n))
		}
		b = b[n:]
		if num == 1 && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return nil, fmt.Errorf("cannot decode EventRecords.events: %w", protowire.ParseError(m))
			}
			ev := new(si.EventRecord)
			if err := proto.Unmarshal(v, ev); err != nil {
				return nil, fmt.Errorf("cannot decode EventRecords.events[%d]: %w", len(events), err)
			}
			events = append(events, ev)
			b = b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return nil, fmt.Errorf("cannot decode EventRecords: %w", protowire.ParseError(m))
		}
		b = b[m:]
	}
	return events, nil
}

package sicore

/*
#include <stdint.h>
#include "sicore.h"
void sicore_v1go_set_logger(int32_t max_level);
void sicore_v1go_set_current_handle(uintptr_t h);
uintptr_t sicore_v1go_current_handle(void);
*/
import "C"

import (
	"encoding/json"

	"github.com/apache/yunikorn-scheduler-interface/lib/go/api"
	"github.com/apache/yunikorn-scheduler-interface/lib/go/si"
	"google.golang.org/protobuf/proto"
)

// The Go entry points of the callback table and the log, exported under
// this edition's C names (shim.c calls them), and the Go side of shim.c's
// other C names; the callbacks that are the same in both editions run in
// callbacks_common.go.

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
	sendEvents(uintptr(h), borrowed(msg, n))
}

//export sicoreV1GoUpdateContainerSchedulingState
func sicoreV1GoUpdateContainerSchedulingState(h C.uintptr_t, msg *C.uint8_t, n C.size_t) {
	updateContainerSchedulingState(uintptr(h), borrowed(msg, n))
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
	releaseHandle(uintptr(h))
}

// currentHandle is the handle of the callback running on this thread, 0
// outside callbacks; see shim_common.h.
func currentHandle() uintptr { return uintptr(C.sicore_v1go_current_handle()) }

// setCurrentHandle marks the calling thread as running a callback of h
// (0: none); see shim_common.h.
func setCurrentHandle(h uintptr) { C.sicore_v1go_set_current_handle(C.uintptr_t(h)) }

// setLibraryLogger installs the library's forwarding of records up to
// maxLevel to deliverLog (0: none).
func setLibraryLogger(maxLevel int32) { C.sicore_v1go_set_logger(C.int32_t(maxLevel)) }

//export sicoreV1GoLog
func sicoreV1GoLog(level C.int32_t, target *C.uint8_t, targetLen C.size_t, msg *C.uint8_t, msgLen C.size_t) {
	deliverLog(level, target, targetLen, msg, msgLen)
}

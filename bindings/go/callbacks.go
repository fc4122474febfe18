package sicore

/*
#include <stdint.h>
#include "sicore.h"
void sicore_go_set_logger(int32_t max_level);
void sicore_go_set_current_handle(uintptr_t h);
uintptr_t sicore_go_current_handle(void);
*/
import "C"

import (
	"fmt"

	"github.com/apache/incubator-yunikorn-scheduler-interface/lib/go/api"
	"github.com/apache/incubator-yunikorn-scheduler-interface/lib/go/si"
	"github.com/golang/protobuf/proto"
)

// The Go entry points of the callback table and the log, exported under
// this edition's C names (shim.c calls them), and the Go side of shim.c's
// other C names; the callbacks that are the same in both editions run in
// callbacks_common.go.

//export sicoreGoUpdateAllocation
func sicoreGoUpdateAllocation(h C.uintptr_t, msg *C.uint8_t, n C.size_t, reply *C.sicore_reply) C.int32_t {
	return statusCall(h, "UpdateAllocation", msg, n, reply, decodeAllocationResponse,
		api.ResourceManagerCallback.UpdateAllocation)
}

//export sicoreGoUpdateApplication
func sicoreGoUpdateApplication(h C.uintptr_t, msg *C.uint8_t, n C.size_t, reply *C.sicore_reply) C.int32_t {
	return statusCall(h, "UpdateApplication", msg, n, reply, unmarshal[si.ApplicationResponse],
		api.ResourceManagerCallback.UpdateApplication)
}

//export sicoreGoUpdateNode
func sicoreGoUpdateNode(h C.uintptr_t, msg *C.uint8_t, n C.size_t, reply *C.sicore_reply) C.int32_t {
	return statusCall(h, "UpdateNode", msg, n, reply, unmarshal[si.NodeResponse],
		api.ResourceManagerCallback.UpdateNode)
}

//export sicoreGoPredicates
func sicoreGoPredicates(h C.uintptr_t, msg *C.uint8_t, n C.size_t, reply *C.sicore_reply) C.int32_t {
	return statusCall(h, "Predicates", msg, n, reply, decodePredicatesArgs,
		api.ResourceManagerCallback.Predicates)
}

//export sicoreGoReSyncSchedulerCache
func sicoreGoReSyncSchedulerCache(h C.uintptr_t, msg *C.uint8_t, n C.size_t, reply *C.sicore_reply) C.int32_t {
	return statusCall(h, "ReSyncSchedulerCache", msg, n, reply, decodeReSyncSchedulerCacheArgs,
		api.ResourceManagerCallback.ReSyncSchedulerCache)
}

//export sicoreGoSendEvent
func sicoreGoSendEvent(h C.uintptr_t, msg *C.uint8_t, n C.size_t) {
	sendEvents(uintptr(h), borrowed(msg, n))
}

//export sicoreGoUpdateContainerSchedulingState
func sicoreGoUpdateContainerSchedulingState(h C.uintptr_t, msg *C.uint8_t, n C.size_t) {
	updateContainerSchedulingState(uintptr(h), borrowed(msg, n))
}

//export sicoreGoUpdateConfiguration
func sicoreGoUpdateConfiguration(h C.uintptr_t, msg *C.uint8_t, n C.size_t, reply *C.sicore_reply) {
	setReply(reply, configurationAnswer(uintptr(h), borrowed(msg, n)))
}

// configurationAnswer runs UpdateConfiguration and returns the encoded
// si.UpdateConfigurationResponse for the library. A nil response, a
// decoding failure or a panic becomes an answer with Success false and
// the reason.
func configurationAnswer(h uintptr, msg []byte) (answer []byte) {
	const method = "UpdateConfiguration"
	failed := func(reason string) []byte {
		b, _ := proto.Marshal(&si.UpdateConfigurationResponse{Success: false, Reason: reason})
		return b
	}
	var r *registration
	defer func() {
		if p := recover(); p != nil {
			logPanic(r, method, p)
			answer = failed(fmt.Sprintf("panic in ResourceManagerCallback.%s: %v", method, p))
		}
	}()
	r = lookup(h)
	req := new(si.UpdateConfigurationRequest)
	if err := proto.Unmarshal(msg, req); err != nil {
		return failed(fmt.Sprintf("sicore Go binding: cannot decode the UpdateConfigurationRequest: %v", err))
	}
	var resp *si.UpdateConfigurationResponse
	if failure := r.run(method, func() { resp = r.cb.UpdateConfiguration(req) }); failure != "" {
		return failed(failure)
	}
	if resp == nil {
		return failed("ResourceManagerCallback.UpdateConfiguration returned nil")
	}
	b, err := proto.Marshal(resp)
	if err != nil {
		return failed(fmt.Sprintf("sicore Go binding: cannot encode the UpdateConfigurationResponse: %v", err))
	}
	return b
}

//export sicoreGoRelease
func sicoreGoRelease(h C.uintptr_t) {
	releaseHandle(uintptr(h))
}

// currentHandle is the handle of the callback running on this thread, 0
// outside callbacks; see shim_common.h.
func currentHandle() uintptr { return uintptr(C.sicore_go_current_handle()) }

// setCurrentHandle marks the calling thread as running a callback of h
// (0: none); see shim_common.h.
func setCurrentHandle(h uintptr) { C.sicore_go_set_current_handle(C.uintptr_t(h)) }

// setLibraryLogger installs the library's forwarding of records up to
// maxLevel to deliverLog (0: none).
func setLibraryLogger(maxLevel int32) { C.sicore_go_set_logger(C.int32_t(maxLevel)) }

//export sicoreGoLog
func sicoreGoLog(level C.int32_t, target *C.uint8_t, targetLen C.size_t, msg *C.uint8_t, msgLen C.size_t) {
	deliverLog(level, target, targetLen, msg, msgLen)
}

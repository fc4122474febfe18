package sicore

/*
#include <stdint.h>
#include "sicore.h"
void sicore_v1go_fill_callbacks(sicore_v1_callbacks *t, uintptr_t handle, int predicates, int state_dump);
*/
import "C"

import (
	"runtime"

	"github.com/apache/yunikorn-scheduler-interface/lib/go/api"
	"github.com/apache/yunikorn-scheduler-interface/lib/go/si"
)

// This file is the edition's half of Scheduler: the SI methods and the C
// entry points they reach; scheduler_common.go is the neutral half.

// The binding implements the upstream scheduler interface.
var _ api.SchedulerAPI = (*Scheduler)(nil)

// RegisterResourceManager registers (or re-registers, resetting its state)
// a resource manager and its callbacks through the library's v1 family.
// It waits until the library has applied the request's config (empty:
// the built-in default): invalid YAML returns an error matching
// ErrRejected with the library's reason. The callbacks run on library
// threads, possibly concurrently, so callback must be safe for concurrent
// use. When callback also implements api.StateDumpPlugin, its
// GetStateDump is included in the library's state dump.
func (s *Scheduler) RegisterResourceManager(request *si.RegisterResourceManagerRequest,
	callback api.ResourceManagerCallback) (*si.RegisterResourceManagerResponse, error) {
	const op = "RegisterResourceManager"
	if request == nil {
		return nil, newError(op, StatusInvalidArgument, "request is nil")
	}
	if callback == nil {
		return nil, newError(op, StatusInvalidArgument, "callback is nil")
	}
	b, err := marshal(op, request)
	if err != nil {
		return nil, err
	}
	return s.registerEncoded(b, callback)
}

// registerEntry fills the v1 callback table of the registration r (the
// predicates slot only when predicates is set, get_state_dump only when
// the RM implements api.StateDumpPlugin) and hands it and the encoded
// si.RegisterResourceManagerRequest b to the library.
func registerEntry(p *C.sicore_scheduler, b []byte, r *registration, predicates bool,
	respBuf, errBuf *C.sicore_buffer) C.enum_sicore_status {
	_, stateDump := r.cb.(api.StateDumpPlugin)
	var table C.sicore_v1_callbacks
	C.sicore_v1go_fill_callbacks(&table, C.uintptr_t(r.handle), cBool(predicates), cBool(stateDump))
	return C.sicore_v1_register_resource_manager(p, bytePtr(b), C.size_t(len(b)), &table, respBuf, errBuf)
}

// UpdateAllocation queues allocations (requests, placed or foreign
// allocations, resizes; merged by allocationKey) and releases by key. The
// request is checked before it is queued (an unknown rmID fails here);
// its outcome reaches the resource manager through
// ResourceManagerCallback.UpdateAllocation. Safe to call from inside a
// callback.
func (s *Scheduler) UpdateAllocation(request *si.AllocationRequest) error {
	return s.updateAllocation(request)
}

// UpdateApplication queues applications to add and remove; the outcome
// reaches ResourceManagerCallback.UpdateApplication. Checked and queued
// like UpdateAllocation.
func (s *Scheduler) UpdateApplication(request *si.ApplicationRequest) error {
	if request == nil {
		return newError(opUpdateApplication, StatusInvalidArgument, "request is nil")
	}
	return s.queue(opUpdateApplication, request)
}

// UpdateNode queues nodes to create, update, drain or remove; the outcome
// reaches ResourceManagerCallback.UpdateNode. Checked and queued like
// UpdateAllocation.
func (s *Scheduler) UpdateNode(request *si.NodeRequest) error {
	if request == nil {
		return newError(opUpdateNode, StatusInvalidArgument, "request is nil")
	}
	return s.queue(opUpdateNode, request)
}

// queueEntry calls the library's asynchronous entry point of op with the
// encoded request b; known is false for an op that has none.
func queueEntry(op string, p *C.sicore_scheduler, b []byte, errBuf *C.sicore_buffer) (st C.enum_sicore_status, known bool) {
	switch op {
	case opUpdateAllocation:
		return C.sicore_v1_update_allocation(p, bytePtr(b), C.size_t(len(b)), errBuf), true
	case opUpdateApplication:
		return C.sicore_v1_update_application(p, bytePtr(b), C.size_t(len(b)), errBuf), true
	case opUpdateNode:
		return C.sicore_v1_update_node(p, bytePtr(b), C.size_t(len(b)), errBuf), true
	}
	return 0, false
}

// UpdateConfiguration applies the configuration carried by request (its
// extraConfig first, then the config YAML) to the resource manager
// request.RmID. It waits for the outcome: invalid YAML returns an error
// matching ErrRejected and the old queues stay; an unchanged config is a
// no-op.
func (s *Scheduler) UpdateConfiguration(request *si.UpdateConfigurationRequest) error {
	const op = "UpdateConfiguration"
	if request == nil {
		return newError(op, StatusInvalidArgument, "request is nil")
	}
	if err := refuseInCallback(op); err != nil {
		return err
	}
	b, err := marshal(op, request)
	if err != nil {
		return err
	}
	p, err := s.enter(op)
	if err != nil {
		return err
	}
	defer s.leave()
	var errBuf C.sicore_buffer
	st := C.sicore_v1_update_configuration(p, bytePtr(b), C.size_t(len(b)), &errBuf)
	runtime.KeepAlive(b)
	if st != C.SICORE_OK {
		return takeError(op, st, &errBuf)
	}
	return nil
}

// Stop is api.SchedulerAPI's Stop: Close, with a failure logged since
// Stop cannot return it (the scheduler then keeps running; see Close).
func (s *Scheduler) Stop() {
	if err := s.Close(); err != nil {
		s.logger.Error("sicore: Stop failed", "error", err)
	}
}

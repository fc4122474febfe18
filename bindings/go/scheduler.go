package sicore

/*
#include <stdint.h>
#include "sicore.h"
void sicore_go_fill_callbacks(sicore_callbacks *t, uintptr_t handle, int predicates);
*/
import "C"

import (
	"runtime"

	"github.com/apache/incubator-yunikorn-scheduler-interface/lib/go/api"
	"github.com/apache/incubator-yunikorn-scheduler-interface/lib/go/si"
)

// This file is the edition's half of Scheduler: the SI methods and the C
// entry points they reach; scheduler_common.go is the neutral half.

// The binding implements the upstream scheduler interface.
var _ api.SchedulerAPI = (*Scheduler)(nil)

// RegisterResourceManager registers (or re-registers, resetting its state)
// a resource manager and its callbacks. It waits until the library has
// loaded the policy group's configuration: a missing or invalid
// configuration returns an error matching ErrRejected with the library's
// reason. The callbacks run on library threads, possibly concurrently, so
// callback must be safe for concurrent use.
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

// registerEntry fills the callback table of the registration r (the
// predicates slot only when predicates is set) and hands it and the
// encoded si.RegisterResourceManagerRequest b to the library.
func registerEntry(p *C.sicore_scheduler, b []byte, r *registration, predicates bool,
	respBuf, errBuf *C.sicore_buffer) C.enum_sicore_status {
	var table C.sicore_callbacks
	C.sicore_go_fill_callbacks(&table, C.uintptr_t(r.handle), cBool(predicates))
	return C.sicore_register_resource_manager(p, bytePtr(b), C.size_t(len(b)), &table, respBuf, errBuf)
}

// UpdateAllocation queues asks to add and asks or allocations to release.
// The request is checked before it is queued (an unknown rmID or a missing
// allocationKey or applicationID fails here); its outcome reaches the
// resource manager through ResourceManagerCallback.UpdateAllocation. Safe
// to call from inside a callback.
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
		return C.sicore_update_allocation(p, bytePtr(b), C.size_t(len(b)), errBuf), true
	case opUpdateApplication:
		return C.sicore_update_application(p, bytePtr(b), C.size_t(len(b)), errBuf), true
	case opUpdateNode:
		return C.sicore_update_node(p, bytePtr(b), C.size_t(len(b)), errBuf), true
	}
	return 0, false
}

// UpdateConfiguration makes the library re-read the configuration of the
// resource manager clusterID (its rmID) and apply it. It waits for the
// outcome: an invalid configuration returns an error matching ErrRejected
// and the old configuration stays in force. When the file has not changed
// yet (Kubernetes reports a configmap change before the kubelet rewrites
// the mounted file), the library watches it for two minutes and applies
// the first changed, valid version; see the project's docs/configuration.md
// ("Reloading").
func (s *Scheduler) UpdateConfiguration(clusterID string) error {
	const op = "UpdateConfiguration"
	if err := refuseInCallback(op); err != nil {
		return err
	}
	p, err := s.enter(op)
	if err != nil {
		return err
	}
	defer s.leave()
	return s.updateConfiguration(op, p, clusterID)
}

func (s *Scheduler) updateConfiguration(op string, p *C.sicore_scheduler, clusterID string) error {
	b := []byte(clusterID)
	var errBuf C.sicore_buffer
	st := C.sicore_update_configuration(p, bytePtr(b), C.size_t(len(b)), &errBuf)
	runtime.KeepAlive(b)
	if st != C.SICORE_OK {
		return takeError(op, st, &errBuf)
	}
	return nil
}

// SetPolicyConfig replaces the in-memory queues.yaml text of a policy
// group (the text WithPolicyConfig gave, which wins over files) and
// reloads every registered resource manager that uses the group. It waits
// for the outcome and is all or nothing: invalid text, or a reload that
// would fail for any of those resource managers, returns an error matching
// ErrRejected and the old configuration stays in force. An empty
// queuesYAML removes the in-memory text, so the group's file applies
// again. A group no resource manager uses yet is checked and kept for
// later registrations.
func (s *Scheduler) SetPolicyConfig(policyGroup, queuesYAML string) error {
	const op = "SetPolicyConfig"
	if err := refuseInCallback(op); err != nil {
		return err
	}
	p, err := s.enter(op)
	if err != nil {
		return err
	}
	defer s.leave()
	g := []byte(policyGroup)
	y := []byte(queuesYAML)
	var errBuf C.sicore_buffer
	st := C.sicore_set_policy_config(p, bytePtr(g), C.size_t(len(g)), bytePtr(y), C.size_t(len(y)), &errBuf)
	runtime.KeepAlive(g)
	runtime.KeepAlive(y)
	if st != C.SICORE_OK {
		return takeError(op, st, &errBuf)
	}
	return nil
}

// C trampolines between the library's callback table and the Go functions
// exported in callbacks.go. They exist so that the table
// holds functions with the header's exact signatures: user_data travels as
// a void* on the C side and as the integer value of a runtime/cgo.Handle on
// the Go side, and the casts between the two happen here, in C. This file
// is the edition's half: its table; the current handle and the log
// trampoline are the neutral half, shim_common.h.

// The C names of this edition (see shim_common.h).
#define SHIM_CURRENT_HANDLE sicore_v1go_current_handle
#define SHIM_SET_CURRENT_HANDLE sicore_v1go_set_current_handle
#define SHIM_SET_LOGGER sicore_v1go_set_logger
#define SHIM_GO_LOG sicoreV1GoLog
#include "shim_common.h"

static int32_t shim_update_allocation(void *ud, const uint8_t *msg, size_t len, sicore_reply *r) {
	int32_t rc;
	IN_CALLBACK(ud, rc = sicoreV1GoUpdateAllocation((uintptr_t)ud, (uint8_t *)msg, len, r));
	return rc;
}

static int32_t shim_update_application(void *ud, const uint8_t *msg, size_t len, sicore_reply *r) {
	int32_t rc;
	IN_CALLBACK(ud, rc = sicoreV1GoUpdateApplication((uintptr_t)ud, (uint8_t *)msg, len, r));
	return rc;
}

static int32_t shim_update_node(void *ud, const uint8_t *msg, size_t len, sicore_reply *r) {
	int32_t rc;
	IN_CALLBACK(ud, rc = sicoreV1GoUpdateNode((uintptr_t)ud, (uint8_t *)msg, len, r));
	return rc;
}

static int32_t shim_predicates(void *ud, const uint8_t *msg, size_t len, sicore_reply *r) {
	int32_t rc;
	IN_CALLBACK(ud, rc = sicoreV1GoPredicates((uintptr_t)ud, (uint8_t *)msg, len, r));
	return rc;
}

static void shim_preemption_predicates(void *ud, const uint8_t *msg, size_t len, sicore_reply *r) {
	IN_CALLBACK(ud, sicoreV1GoPreemptionPredicates((uintptr_t)ud, (uint8_t *)msg, len, r));
}

static void shim_send_event(void *ud, const uint8_t *msg, size_t len) {
	IN_CALLBACK(ud, sicoreV1GoSendEvent((uintptr_t)ud, (uint8_t *)msg, len));
}

static void shim_update_container_scheduling_state(void *ud, const uint8_t *msg, size_t len) {
	IN_CALLBACK(ud, sicoreV1GoUpdateContainerSchedulingState((uintptr_t)ud, (uint8_t *)msg, len));
}

static void shim_get_state_dump(void *ud, sicore_reply *r) {
	IN_CALLBACK(ud, sicoreV1GoGetStateDump((uintptr_t)ud, r));
}

static void shim_release(void *ud) {
	sicoreV1GoRelease((uintptr_t)ud);
}

// predicates 0 leaves the predicates callback NULL (WithoutPredicates):
// the library then never asks and every node fits. state_dump 0 leaves
// get_state_dump NULL: the RM does not implement api.StateDumpPlugin.
void sicore_v1go_fill_callbacks(sicore_v1_callbacks *t, uintptr_t handle, int predicates, int state_dump) {
	t->struct_size = sizeof *t;
	t->user_data = (void *)handle;
	t->update_allocation = shim_update_allocation;
	t->update_application = shim_update_application;
	t->update_node = shim_update_node;
	t->predicates = predicates ? shim_predicates : NULL;
	t->preemption_predicates = shim_preemption_predicates;
	t->send_event = shim_send_event;
	t->update_container_scheduling_state = shim_update_container_scheduling_state;
	t->get_state_dump = state_dump ? shim_get_state_dump : NULL;
	t->release = shim_release;
}

// C trampolines between the library's callback table and the Go functions
// exported in callbacks.go. They exist so that the table
// holds functions with the header's exact signatures: user_data travels as
// a void* on the C side and as the integer value of a runtime/cgo.Handle on
// the Go side, and the casts between the two happen here, in C. This file
// is the edition's half: its table; the current handle and the log
// trampoline are the neutral half, shim_common.h.

// The C names of this edition (see shim_common.h).
#define SHIM_CURRENT_HANDLE sicore_go_current_handle
#define SHIM_SET_CURRENT_HANDLE sicore_go_set_current_handle
#define SHIM_SET_LOGGER sicore_go_set_logger
#define SHIM_GO_LOG sicoreGoLog
#include "shim_common.h"

static int32_t shim_update_allocation(void *ud, const uint8_t *msg, size_t len, sicore_reply *r) {
	int32_t rc;
	IN_CALLBACK(ud, rc = sicoreGoUpdateAllocation((uintptr_t)ud, (uint8_t *)msg, len, r));
	return rc;
}

static int32_t shim_update_application(void *ud, const uint8_t *msg, size_t len, sicore_reply *r) {
	int32_t rc;
	IN_CALLBACK(ud, rc = sicoreGoUpdateApplication((uintptr_t)ud, (uint8_t *)msg, len, r));
	return rc;
}

static int32_t shim_update_node(void *ud, const uint8_t *msg, size_t len, sicore_reply *r) {
	int32_t rc;
	IN_CALLBACK(ud, rc = sicoreGoUpdateNode((uintptr_t)ud, (uint8_t *)msg, len, r));
	return rc;
}

static int32_t shim_predicates(void *ud, const uint8_t *msg, size_t len, sicore_reply *r) {
	int32_t rc;
	IN_CALLBACK(ud, rc = sicoreGoPredicates((uintptr_t)ud, (uint8_t *)msg, len, r));
	return rc;
}

static int32_t shim_resync_scheduler_cache(void *ud, const uint8_t *msg, size_t len, sicore_reply *r) {
	int32_t rc;
	IN_CALLBACK(ud, rc = sicoreGoReSyncSchedulerCache((uintptr_t)ud, (uint8_t *)msg, len, r));
	return rc;
}

static void shim_send_event(void *ud, const uint8_t *msg, size_t len) {
	IN_CALLBACK(ud, sicoreGoSendEvent((uintptr_t)ud, (uint8_t *)msg, len));
}

static void shim_update_container_scheduling_state(void *ud, const uint8_t *msg, size_t len) {
	IN_CALLBACK(ud, sicoreGoUpdateContainerSchedulingState((uintptr_t)ud, (uint8_t *)msg, len));
}

static void shim_update_configuration(void *ud, const uint8_t *msg, size_t len, sicore_reply *r) {
	IN_CALLBACK(ud, sicoreGoUpdateConfiguration((uintptr_t)ud, (uint8_t *)msg, len, r));
}

static void shim_release(void *ud) {
	sicoreGoRelease((uintptr_t)ud);
}

// predicates 0 leaves the predicates callback NULL (WithoutPredicates):
// the library then never asks and every node fits.
void sicore_go_fill_callbacks(sicore_callbacks *t, uintptr_t handle, int predicates) {
	t->struct_size = sizeof *t;
	t->user_data = (void *)handle;
	t->update_allocation = shim_update_allocation;
	t->update_application = shim_update_application;
	t->update_node = shim_update_node;
	t->predicates = predicates ? shim_predicates : NULL;
	t->resync_scheduler_cache = shim_resync_scheduler_cache;
	t->send_event = shim_send_event;
	t->update_container_scheduling_state = shim_update_container_scheduling_state;
	t->update_configuration = shim_update_configuration;
	t->release = shim_release;
}

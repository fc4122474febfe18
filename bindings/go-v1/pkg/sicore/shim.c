// C trampolines between the library's callback table and the Go functions
// exported in callbacks.go and logger.go. They exist so that the table
// holds functions with the header's exact signatures: user_data travels as
// a void* on the C side and as the integer value of a runtime/cgo.Handle on
// the Go side, and the casts between the two happen here, in C.

#include <stdint.h>
#include "sicore.h"
#include "_cgo_export.h"

// The handle of the callback running on this thread, 0 outside callbacks.
// Library callbacks run on library threads and a Go callback stays on the
// thread that called it, so Go code can ask whether it runs inside a
// callback, and of which registration (Scheduler.Close uses it).
static __thread uintptr_t current_handle;

uintptr_t sicore_v1go_current_handle(void) {
	return current_handle;
}

// Marks the calling thread as running a callback of h (0: none): a
// guarded callback's goroutine does so on its own locked thread.
void sicore_v1go_set_current_handle(uintptr_t h) {
	current_handle = h;
}

#define IN_CALLBACK(ud, call)                     \
	uintptr_t saved = current_handle;         \
	current_handle = (uintptr_t)(ud);         \
	call;                                     \
	current_handle = saved

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

static void shim_log(void *ud, int32_t level, const uint8_t *target, size_t target_len,
		const uint8_t *message, size_t message_len) {
	(void)ud;
	// UINTPTR_MAX is logHandle (logger.go): Close and the waiting calls
	// refuse from inside the log handler, which may run on a library
	// thread or inside a call that holds the scheduler busy.
	IN_CALLBACK(UINTPTR_MAX, sicoreV1GoLog(level, (uint8_t *)target, target_len, (uint8_t *)message, message_len));
}

void sicore_v1go_set_logger(int32_t max_level) {
	sicore_set_logger(max_level > 0 ? shim_log : NULL, NULL, max_level);
}

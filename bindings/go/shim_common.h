// The edition-neutral half of shim.c, included by it: the thread's
// current handle, the IN_CALLBACK wrapper of every trampoline, and the
// log trampoline. The two editions' bindings must not export the same C
// symbols, so the including shim.c names them first:
//   SHIM_CURRENT_HANDLE      uintptr_t (void): the current handle
//   SHIM_SET_CURRENT_HANDLE  void (uintptr_t): sets it
//   SHIM_SET_LOGGER          void (int32_t): installs shim_log
//   SHIM_GO_LOG              the Go log function exported in callbacks.go
// This file is included once, by shim.c, and defines functions: it is
// not a header for other files.

#include <stdint.h>
#include "sicore.h"
#include "_cgo_export.h"

// The handle of the callback running on this thread, 0 outside callbacks.
// Library callbacks run on library threads and a Go callback stays on the
// thread that called it, so Go code can ask whether it runs inside a
// callback, and of which registration (Scheduler.Close uses it).
static __thread uintptr_t current_handle;

uintptr_t SHIM_CURRENT_HANDLE(void) {
	return current_handle;
}

// Marks the calling thread as running a callback of h (0: none): a
// guarded callback's goroutine does so on its own locked thread.
void SHIM_SET_CURRENT_HANDLE(uintptr_t h) {
	current_handle = h;
}

#define IN_CALLBACK(ud, call)                     \
	uintptr_t saved = current_handle;         \
	current_handle = (uintptr_t)(ud);         \
	call;                                     \
	current_handle = saved

static void shim_log(void *ud, int32_t level, const uint8_t *target, size_t target_len,
		const uint8_t *message, size_t message_len) {
	(void)ud;
	// UINTPTR_MAX is logHandle (logger.go): Close and the waiting calls
	// refuse from inside the log handler, which may run on a library
	// thread or inside a call that holds the scheduler busy.
	IN_CALLBACK(UINTPTR_MAX, SHIM_GO_LOG(level, (uint8_t *)target, target_len, (uint8_t *)message, message_len));
}

void SHIM_SET_LOGGER(int32_t max_level) {
	sicore_set_logger(max_level > 0 ? shim_log : NULL, NULL, max_level);
}
